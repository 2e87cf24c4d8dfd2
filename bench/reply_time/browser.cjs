// Usage: browser.cjs URL RUNS GAME SQUARES (run by bench/reply_time.sh)
// Times the computer's reply at `medium` on the page, in headless Chromium: from the last
// click of the move (the page's own click event) to the board showing the reply (the frame
// after `show` drew it), measured inside the page; also how that splits into the request
// (fetch sent to answer read) and the rest (click handling before it, drawing after it).
const { chromium } = require("playwright-core");
const [url, runs, game, clicks] = process.argv.slice(2);
const squares = clicks.split(",");
(async () => {
  const b = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  const page = await b.newPage();
  await page.goto(url);
  await page.evaluate(() => {
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
  });
  await page.waitForSelector(`#game option[value="${game}"]`, { state: "attached" });
  await page.selectOption("#game", game);
  await page.waitForSelector(`#seats[data-game="${game}"]`, { state: "attached" });
  for (let i = 0; i < Number(runs); i++) {
    await page.selectOption("#seat-0", "human");
    await page.selectOption("#seat-1", "medium");
    await page.click("#start");
    await page.waitForFunction(() => window.currentView && window.currentView.step === 0 && window.currentView.moves[0].length);
    for (const sq of squares.slice(0, -1)) await page.click(`#board [data-square="${sq}"]`);
    // The frame after the reply is drawn: `show` sets currentView, then the browser paints.
    await page.evaluate(() => {
      window.shownAt = null;
      const check = () => {
        const v = window.currentView;
        if (v.step === 2 && !v.thinking) window.shownAt = performance.now();
        else requestAnimationFrame(check);
      };
      requestAnimationFrame(check);
    });
    await page.click(`#board [data-square="${squares[squares.length - 1]}"]`);
    await page.waitForFunction(() => window.shownAt !== null, null, { polling: 5, timeout: 120000 });
    const t = await page.evaluate(() => ({ ...window.t, shown: window.shownAt }));
    const f = t.fetches;
    const inRequests = f.reduce((s, x) => s + (x.read - x.sent), 0);
    const ms = (x) => (x / 1000).toFixed(3);
    console.log(`browser ${game} run ${i}: ${ms(t.shown - t.click)} s (requests ${ms(inRequests)} s over ${f.length}: ${f.map((x) => x.path.replace("/api/", "")).join(", ")}; before the first ${ms(f[0].sent - t.click)} s, after the last ${ms(t.shown - f[f.length - 1].read)} s)`);
  }
  await b.close();
})();
