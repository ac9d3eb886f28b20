// knotd console: refreshes the live parts of a page and follows a run in
// progress. It inserts only HTML the console rendered (and escaped).
"use strict";

// busy: the user is writing in a form of el (a question's reason), which a
// refresh would wipe.
function busy(el) {
  const a = document.activeElement;
  if (a && el.contains(a) && a.matches("input, textarea")) {
    return true;
  }
  return [...el.querySelectorAll("input[type=text], textarea")].some((i) => i.value !== "");
}

function refresh(el) {
  const src = el.dataset.src;
  const tick = async () => {
    if (document.visibilityState === "visible" && !busy(el)) {
      try {
        const r = await fetch(src, { cache: "no-store", credentials: "same-origin" });
        const html = r.ok ? await r.text() : "";
        if (r.ok && !busy(el)) {
          el.innerHTML = html;
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
