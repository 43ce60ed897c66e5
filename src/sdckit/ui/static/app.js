// sdckit UI: progressive enhancement of server-rendered pages (no dependency, no CDN).
// Every link and form works without this file; with it, forms are sent with fetch and the
// page is swapped in place (keeping the scroll position), the running task's progress is
// polled, and choosers submit themselves when they change.
(function () {
  "use strict";
  let polling = null;

  function sameOrigin(url) {
    try { return new URL(url, location.href).origin === location.origin; } catch (e) { return false; }
  }

  function swap(html, url, push, target) {
    const doc = new DOMParser().parseFromString(html, "text/html");
    // a parsed document runs no script, so its <noscript> content (a meta refresh) is live
    doc.querySelectorAll("noscript").forEach(function (n) { n.remove(); });
    const fresh = doc.getElementById("app");
    const current = document.getElementById("app");
    if (!fresh || !current) { location.href = url; return; }
    const samePage = current.dataset.page === fresh.dataset.page;
    const y = window.scrollY;
    if (target && samePage && doc.querySelector(target) && document.querySelector(target)) {
      document.querySelector(target).replaceWith(doc.querySelector(target));
      const freshTask = doc.getElementById("task"), task = document.getElementById("task");
      if (!freshTask && task) { current.replaceWith(fresh); }
    } else {
      current.replaceWith(fresh);
    }
    document.title = doc.title;
    if (push) { history.pushState({}, "", url); }
    if (samePage) { window.scrollTo(0, y); } else { window.scrollTo(0, 0); }
    start();
    // focus: an error of a form first (in view), else, on the same page, where the person was
    // working (the button, form or section of the last submit), never back to the top
    let focus = document.querySelector("main .error[role=alert]");
    if (!focus && samePage) { focus = workingElement(); }
    if (!focus && !samePage) { focus = document.querySelector("main h1"); }
    if (focus) {
      if (!focus.matches("a[href], button, input, select, textarea")) { focus.setAttribute("tabindex", "-1"); }
      focus.focus({ preventScroll: true });
      if (samePage || focus.matches(".error")) { focus.scrollIntoView({ block: "nearest" }); }
    }
  }

  // where the person was working: ids of the submit button, its form, the enclosing section
  let working = [];
  function remember(form, submitter) {
    working = [];
    if (submitter && submitter.id) { working.push(submitter.id); }
    if (form && form.id) { working.push(form.id); }
    const section = form && form.closest("section[id], section[aria-labelledby]");
    if (section) { working.push(section.id || section.getAttribute("aria-labelledby")); }
  }
  function workingElement() {
    for (const id of working) {
      const el = document.getElementById(id);
      if (el && !el.disabled) { return el; }
    }
    return null;
  }

  // requests overtake each other (a chooser's submit, then a click on the form it replaces):
  // only the response of the latest request is shown, never an older page over a newer one
  let latest = 0;
  async function go(url, options, push, target) {
    const mine = ++latest;
    document.body.classList.add("loading");
    try {
      const response = await fetch(url, Object.assign({ credentials: "same-origin" }, options || {}));
      const type = response.headers.get("content-type") || "";
      if (mine !== latest) { return; }
      if (!type.includes("text/html")) { location.href = response.url; return; }
      const html = await response.text();
      if (mine !== latest) { return; }
      swap(html, response.url, push, target);
    } catch (e) {
      if (mine === latest) { location.href = url; }
    } finally {
      if (mine === latest) { document.body.classList.remove("loading"); }
    }
  }

  document.addEventListener("click", function (event) {
    const a = event.target.closest("a");
    if (!a || event.defaultPrevented || event.button !== 0 || event.ctrlKey || event.metaKey ||
        event.shiftKey || a.target || a.hasAttribute("download") || !sameOrigin(a.href)) { return; }
    const path = new URL(a.href).pathname;
    if (path.startsWith("/files/") || path.startsWith("/plot/") || path.endsWith(".toml") ||
        path.startsWith("/static/") || a.getAttribute("href").startsWith("#")) { return; }
    event.preventDefault();
    working = a.id ? [a.id] : [];
    go(a.href, {}, true, a.dataset.target);
  });

  document.addEventListener("submit", function (event) {
    const form = event.target;
    const submitter = event.submitter;
    // (form.method and form.action are shadowed by inputs called "method": read the attributes)
    const method = ((submitter && submitter.getAttribute("formmethod")) ||
      form.getAttribute("method") || "get").toLowerCase();
    const action = new URL((submitter && submitter.getAttribute("formaction")) ||
      form.getAttribute("action") || location.href, location.href).href;
    if (event.defaultPrevented || !sameOrigin(action)) { return; }
    event.preventDefault();
    remember(form, submitter);
    const data = new FormData(form, submitter || undefined);
    if (method === "get") {
      const params = new URLSearchParams();
      for (const [k, v] of data.entries()) { if (typeof v === "string") { params.append(k, v); } }
      const url = action.split("?")[0] + "?" + params.toString();
      go(url, {}, true, form.dataset.target);
    } else {
      go(action, { method: "POST", body: data }, true, form.dataset.target);
    }
  });

  document.addEventListener("change", function (event) {
    const el = event.target;
    if (el.hasAttribute("data-autosubmit") && el.form) { el.form.requestSubmit(); }
    const reload = el.getAttribute("data-reload");
    if (reload) { const button = document.getElementById(reload); if (button) { button.click(); } }
  });

  window.addEventListener("popstate", function () { go(location.href, {}, false); });

  function poll(section) {
    const url = section.dataset.taskUrl;
    const bar = section.querySelector("progress");
    const stage = section.querySelector(".task-stage");
    const time = section.querySelector(".task-time");
    async function tick() {
      if (!document.body.contains(section)) { return; }
      try {
        const state = await (await fetch(url, { credentials: "same-origin" })).json();
        if (state.total > 0) { bar.max = state.total; bar.value = state.done; }
        stage.textContent = state.stage;
        time.textContent = state.elapsed.toFixed(1) + " s";
        if (state.state !== "running") {
          const next = state.next && state.next !== location.pathname + location.search ? state.next : location.href;
          go(next, {}, next !== location.href);
          return;
        }
      } catch (e) { /* the next tick tries again */ }
      polling = setTimeout(tick, 200);
    }
    clearTimeout(polling);
    polling = setTimeout(tick, 150);
  }

  function start() {
    const section = document.getElementById("task");
    if (section) { poll(section); }
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); }
  else { start(); }
})();
