// knotd console: refreshes the live parts of a page and follows a run in
// progress. It inserts only HTML the console rendered (and escaped).
"use strict";

function refresh(el) {
  const src = el.dataset.src;
  const tick = async () => {
    if (document.visibilityState === "visible") {
      try {
        const r = await fetch(src, { cache: "no-store", credentials: "same-origin" });
        if (r.ok) {
          el.innerHTML = await r.text();
        }
      } catch (e) {
        // the console stopped, or the network hiccuped: try again later
      }
    }
    setTimeout(tick, 2000);
  };
  setTimeout(tick, 2000);
}

function follow(el) {
  const state = document.getElementById("state");
  const es = new EventSource(el.dataset.src);
  es.addEventListener("ev", (m) => {
    const seq = m.lastEventId;
    if (seq && el.querySelector('[data-seq="' + seq + '"]')) {
      return; // already shown
    }
    el.insertAdjacentHTML("beforeend", m.data);
    const last = el.lastElementChild;
    if (last) {
      last.classList.add("live");
    }
  });
  es.addEventListener("end", (m) => {
    es.close();
    if (state) {
      state.textContent = m.data;
      state.className = "done";
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  for (const id of ["activity", "notebody"]) {
    const el = document.getElementById(id);
    if (el && el.dataset.src) {
      refresh(el);
    }
  }
  const events = document.getElementById("events");
  if (events && events.dataset.src) {
    follow(events);
  }
});
