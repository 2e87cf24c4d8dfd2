// Usage: browser.cjs URL RUNS GAME SQUARES (run by bench/reply_time.sh)
// Times the computer's reply at `medium` on the page, in headless Chromium: from the last
// click of the move (the page's own click event) to the page showing the reply (`show` done),
// measured inside the page; also the request that brought the reply (fetch sent to answer
// read) and the drawing after it. Env WAIT: the long polls' wait in ms (the page's is 250).
const { chromium } = require("playwright-core");
const [url, runs, game, clicks] = process.argv.slice(2);
const squares = clicks.split(",");
(async () => {
  const b = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  const page = await b.newPage();
  await page.goto(url);
  await page.evaluate((wait) => {
    if (wait) { const api = window.api; window.api = (p, body) => api(p, p === "view" ? { ...body, wait } : body); }
    window.t = {};
    document.addEventListener("click", () => { window.t = { click: performance.now(), fetches: [] }; }, true);
    const orig = window.fetch;
    window.fetch = async (...args) => {
      const f = { path: String(args[0]), sent: performance.now() };
      if (window.t.fetches) window.t.fetches.push(f);
      const r = await orig(...args);
      const text = await r.text();
      f.read = performance.now();
      return new Response(text, { status: r.status, statusText: r.statusText, headers: r.headers });
    };
  }, Number(process.env.WAIT || 0));
  await page.waitForSelector(`#game option[value="${game}"]`, { state: "attached" });
  await page.selectOption("#game", game);
  await page.waitForSelector(`#seats[data-game="${game}"]`, { state: "attached" });
  for (let i = 0; i < Number(runs); i++) {
    await page.selectOption("#seat-0", "human");
    await page.selectOption("#seat-1", "medium");
    await page.click("#start");
    await page.waitForFunction(() => window.currentView && window.currentView.step === 0 && window.currentView.moves[0].length);
    for (const sq of squares.slice(0, -1)) await page.click(`#board [data-square="${sq}"]`);
    // The moment `show` has put the reply on the page (the DOM updated; the browser paints it
    // at its next frame, as a terminal paints what it is sent). One promise awaited, so that
    // the measuring takes no CPU from the search meanwhile.
    await page.evaluate(() => {
      window.shown = new Promise((resolve) => {
        const show = window.show;
        window.show = (v) => {
          show(v);
          if (v.step === 2 && !v.thinking) { window.show = show; resolve(performance.now()); }
        };
      });
    });
    await page.click(`#board [data-square="${squares[squares.length - 1]}"]`);
    const shownAt = await page.evaluate(() => window.shown);
    const t = await page.evaluate((shown) => ({ ...window.t, shown }), shownAt);
    // The request that brought the reply: the last one answered before it was shown.
    const f = t.fetches.filter((x) => x.read !== undefined && x.read <= t.shown);
    const last = f[f.length - 1];
    const ms = (x) => (x / 1000).toFixed(3);
    console.log(`browser ${game} run ${i}: ${ms(t.shown - t.click)} s (${t.fetches.length} requests; the click to the first sent ${ms(f[0].sent - t.click)} s; the reply's request (${last.path.replace("/api/", "")}) ${ms(last.read - last.sent)} s; its answer read to shown ${ms(t.shown - last.read)} s)`);
  }
  await b.close();
})();
