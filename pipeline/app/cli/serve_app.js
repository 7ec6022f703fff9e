// ralph serve's only script: a run page follows its run live (server-sent events) and scrubs
// through its history (the state folded at any point). Every text is set with textContent:
// nothing an agent wrote is ever read as HTML. The one exception is the drawn part of the page
// (#pictures: the timeline and the graph), which the server builds and escapes as it builds
// the page itself; it is parsed inertly (DOMParser runs no script) and put in place whole.
"use strict";

(function () {
  const body = document.body;
  const run = body.dataset.run;
  if (!run) {
    return;
  }
  // Relative to the page (.../runs/RUN): every address keeps the page's /t/<token>/ root,
  // which this script never reads or writes.
  const base = encodeURIComponent(run);
  const slider = document.getElementById("at");
  const label = document.getElementById("at-label");
  const total = document.getElementById("total");
  const facts = document.getElementById("facts");

  function fill(table, rows, header) {
    const tbody = table.tBodies[0];
    tbody.replaceChildren();
    for (const row of rows) {
      const tr = document.createElement("tr");
      row.forEach(function (cell, i) {
        const td = document.createElement(i === 0 && header ? "th" : "td");
        td.textContent = cell;
        tr.appendChild(td);
      });
      tbody.appendChild(tr);
    }
  }

  let asked = 0;
  async function show(n) {
    const ticket = ++asked;
    const answer = await fetch(base + "/at?n=" + encodeURIComponent(n));
    if (!answer.ok || ticket !== asked) {
      return;
    }
    const state = await answer.json();
    label.textContent = String(state.n);
    const forkAt = document.getElementById("fork-at");
    if (forkAt) {
      forkAt.value = String(state.n);
    }
    fill(document.getElementById("state"), state.rows, true);
    fill(document.getElementById("changes"), state.changes, false);
    body.dataset.shown = String(state.n);
  }

  async function redraw() {
    // The facts known now: a fact that arrives during the fetch is drawn by the next one.
    const known = body.dataset.events;
    const answer = await fetch(base + "/pictures");
    if (!answer.ok) {
      return;
    }
    const parsed = new DOMParser().parseFromString(await answer.text(), "text/html");
    const fresh = parsed.getElementById("pictures");
    const shown = document.getElementById("pictures");
    if (fresh && shown) {
      shown.replaceWith(document.adoptNode(fresh));
      body.dataset.drawn = known;
    }
  }

  let drawDue = null;
  function refreshDrawing() {
    // The agents, the timeline and the graph: at most once a second, however fast the
    // facts come (each is one fold of the log on the server).
    if (drawDue !== null) {
      return;
    }
    drawDue = setTimeout(async function () {
      drawDue = null;
      await redraw();
    }, 1000);
  }

  let shownDue = null;
  slider.addEventListener("input", function () {
    // One fold a moment, however fast the slider moves.
    clearTimeout(shownDue);
    shownDue = setTimeout(function () {
      show(slider.value);
    }, 120);
  });

  const stream = new EventSource(base + "/stream?after=" + encodeURIComponent(body.dataset.events));
  stream.addEventListener("fact", function (message) {
    const fact = JSON.parse(message.data);
    const item = document.createElement("li");
    item.value = fact.n;
    item.textContent = fact.text;
    facts.appendChild(item);
    const following = Number(slider.value) === Number(slider.max);
    slider.max = String(fact.n);
    total.textContent = String(fact.n);
    body.dataset.events = String(fact.n);
    if (following) {
      slider.value = String(fact.n);
      show(fact.n);
    }
    refreshDrawing();
  });
  stream.addEventListener("end", function () {
    stream.close();
    body.dataset.ended = "true";
  });
  show(slider.value);
})();
