// ncclnb's live figure (ncclnb/views/live.py): draws the plotly figure the
// kernel sets on the model, and sends clicks back.
//
// plotly.js (4.8 MB) is not in the widget's state: the first figure of a page
// asks the kernel for it in a custom message, which no notebook saves, and
// every figure of the page shares that one copy. So a saved or exported
// notebook stays small; where no kernel answers (an exported page, a notebook
// reopened without its kernel) the static copy the view printed above stays
// on show. A figure is drawn only once its element has a width (a hidden tab,
// an output not yet attached), is checked to have drawn, and only then hides
// the static copy; one that cannot draw says why and how to redraw.

const SHARED = "__ncclnbPlotly";
const ASK_AGAIN_MS = 60000; // a kernel busy with a long "Run All" answers late, not never

function shared() {
  if (!globalThis[SHARED]) {
    let resolve;
    const promise = new Promise((r) => (resolve = r));
    globalThis[SHARED] = { promise, resolve, plotly: null, askedAt: 0 };
  }
  return globalThis[SHARED];
}

function evaluatePlotly(source) {
  // plotly.min.js is a UMD bundle: given module/exports it fills module.exports
  const module = { exports: {} };
  new Function("module", "exports", "define", source)(module, module.exports, undefined);
  const plotly = module.exports;
  if (!plotly || typeof plotly.react !== "function") throw new Error("the kernel's plotly.js did not load");
  return plotly;
}

function acceptPlotly(msg, buffers) {
  const box = shared();
  if (box.plotly || !msg || msg.kind !== "plotly.js" || !buffers || !buffers.length) return;
  const view = buffers[0];
  const bytes = view instanceof DataView ? new Uint8Array(view.buffer, view.byteOffset, view.byteLength) : new Uint8Array(view);
  try {
    box.plotly = evaluatePlotly(new TextDecoder().decode(bytes));
    box.resolve(box.plotly);
  } catch (err) {
    box.error = err;
    box.resolve(null);
  }
}

function askForPlotly(model) {
  const box = shared();
  if (box.plotly) return;
  const now = Date.now();
  if (now - box.askedAt < ASK_AGAIN_MS) return;
  box.askedAt = now;
  model.send({ kind: "plotly.js?" });
}

function whenSized(el) {
  // plotly sizes a figure from its element: wait until the element is on the page with a width
  return new Promise((resolve) => {
    const ready = () => el.isConnected && el.getBoundingClientRect().width > 0;
    if (ready()) return resolve();
    const observer = new ResizeObserver(() => {
      if (ready()) {
        observer.disconnect();
        resolve();
      }
    });
    observer.observe(el);
  });
}

function hideStaticCopy(id) {
  if (!id) return;
  for (const node of document.querySelectorAll(`[data-ncclnb-static="${CSS.escape(id)}"]`)) node.style.display = "none";
}

function hasDrawnData(gd, traces) {
  // drawn, not just laid out: a figure with traces has marks on the page
  if (!gd.querySelector(".main-svg")) return false;
  if (!traces) return true; // a figure of shapes and notes only
  const marks = ".plot .point, .plot .js-line, .plot .textpoint, .heatmaplayer image, .barlayer path, .shapelayer path";
  return gd.querySelectorAll(marks).length > 0;
}

function report(model, status) {
  if (model.get("status") === status) return;
  model.set("status", status);
  model.save_changes();
}

export default {
  initialize({ model }) {
    const onMessage = (msg, buffers) => acceptPlotly(msg, buffers);
    model.on("msg:custom", onMessage);
    return () => model.off("msg:custom", onMessage);
  },

  render({ model, el }) {
    el.classList.add((model.get("figure") || {}).data ? "ncclnb-live-figure" : "ncclnb-live-marker");
    const gd = document.createElement("div");
    gd.style.width = "100%";
    const note = document.createElement("div");
    note.className = "ncclnb-live-note";
    note.style.cssText = "color:#666;font-size:0.9em;padding:2px 0";
    el.append(note, gd);
    let plotly = null;
    let wired = false;
    let generation = 0;

    async function draw() {
      const mine = ++generation;
      const figure = model.get("figure") || {};
      if (!figure.data) {
        // no figure: this widget only stands for a view without one (a table, cards)
        hideStaticCopy(model.get("static_id"));
        return;
      }
      if (!plotly) {
        note.textContent = "Interactive figure: waiting for the kernel to send plotly.js (it answers once it is idle). The copy above shows the same figure.";
        askForPlotly(model);
        const timer = setInterval(() => askForPlotly(model), ASK_AGAIN_MS);
        plotly = await shared().promise;
        clearInterval(timer);
        if (!plotly) {
          note.textContent = `Interactive figure could not load plotly.js (${shared().error}). The copy above shows the same figure; re-run the cell to try again.`;
          report(model, "failed: plotly.js did not load");
          return;
        }
      }
      await whenSized(el);
      if (mine !== generation) return; // a newer figure came meanwhile
      try {
        await plotly.react(gd, figure.data, figure.layout || {}, { displaylogo: false, responsive: true });
        if (!hasDrawnData(gd, figure.data.length)) throw new Error("plotly laid out the axes but drew no data");
      } catch (err) {
        plotly.purge(gd);
        note.textContent = `Interactive figure could not draw (${err && err.message ? err.message : err}). The copy above shows the same figure; re-run the cell, or call .redraw() on the view, to try again.`;
        report(model, "failed: " + (err && err.message ? err.message : String(err)));
        return;
      }
      note.textContent = "";
      hideStaticCopy(model.get("static_id"));
      report(model, "drawn");
      if (!wired) {
        wired = true;
        gd.on("plotly_click", (event) => {
          const point = event && event.points && event.points[0];
          if (!point) return;
          const index = Array.isArray(point.pointNumber) ? point.pointNumber : point.pointIndex ?? point.pointNumber;
          model.send({ kind: "click", curve: point.curveNumber, x: point.x ?? null, y: point.y ?? null, point: index ?? null });
        });
      }
    }

    const redraw = () => {
      draw();
    };
    model.on("change:figure", redraw);
    model.on("change:redraws", redraw);
    const resize = new ResizeObserver(() => {
      if (plotly && gd.data && el.getBoundingClientRect().width > 0) plotly.Plots.resize(gd);
    });
    resize.observe(el);
    draw();
    return () => {
      model.off("change:figure", redraw);
      model.off("change:redraws", redraw);
      resize.disconnect();
      if (plotly) plotly.purge(gd);
    };
  },
};
