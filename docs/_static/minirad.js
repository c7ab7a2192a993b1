// Click (or press Enter on) a picture of a page to see it at full size over the
// page; click again, or press Escape, to close it. Nothing is fetched: the
// picture is the one the page already shows.
"use strict";

function minirad_enlarge(img) {
  const box = document.createElement("div");
  box.className = "minirad-lightbox";
  box.setAttribute("role", "dialog");
  box.setAttribute("aria-label", (img.alt || "picture") + ", full size (Escape closes)");
  box.tabIndex = -1;
  const big = document.createElement("img");
  big.src = img.currentSrc || img.src;
  big.alt = img.alt;
  box.appendChild(big);
  const close = () => {
    box.remove();
    document.removeEventListener("keydown", onKey);
    img.focus();
  };
  const onKey = (event) => { if (event.key === "Escape") close(); };
  box.addEventListener("click", close);
  document.addEventListener("keydown", onKey);
  document.body.appendChild(box);
  box.focus();
}

document.addEventListener("DOMContentLoaded", () => {
  for (const img of document.querySelectorAll(".bd-article img")) {
    if (img.closest("a")) continue;   // a picture that is a link keeps its link
    img.classList.add("enlargeable");
    img.tabIndex = 0;
    img.title = "Click to see it at full size";
    img.addEventListener("click", () => minirad_enlarge(img));
    img.addEventListener("keydown", (event) => {
      if (event.key === "Enter") minirad_enlarge(img);
    });
  }
});
