(function () {
"use strict";
// Light or dark: the visitor's choice (remembered), else the system's preference. The ◐ button
// (#theme) switches and announces it with an "imx-theme" event on document.
const root = document.documentElement;
let theme = null; try { theme = localStorage.getItem("imx-theme"); } catch (e) { theme = null; }
if (theme !== "dark" && theme !== "light") theme = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
root.dataset.theme = theme;
const button = document.getElementById("theme");
if (button) button.addEventListener("click", () => {
  const next = root.dataset.theme === "dark" ? "light" : "dark";
  root.dataset.theme = next;
  try { localStorage.setItem("imx-theme", next); } catch (e) { /* file:// may forbid storage */ }
  document.dispatchEvent(new Event("imx-theme"));
});
})();
