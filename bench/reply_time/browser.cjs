// Usage: browser.cjs URL RUNS GAME SQUARES (run by bench/reply_time.sh)
// Times the computer's reply at `medium` on the page: from the last click of the move to the
// board showing the reply, in headless Chromium.
const { chromium } = require("playwright-core");
const [url, runs, game, clicks] = process.argv.slice(2);
const squares = clicks.split(",");
(async () => {
  const b = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  const page = await b.newPage();
  await page.goto(url);
  await page.waitForSelector(`#game option[value="${game}"]`, { state: "attached" });
  await page.selectOption("#game", game);
  await page.waitForSelector(`#seats[data-game="${game}"]`, { state: "attached" });
  for (let i = 0; i < Number(runs); i++) {
    await page.selectOption("#seat-0", "human");
    await page.selectOption("#seat-1", "medium");
    await page.click("#start");
    await page.waitForFunction(() => window.currentView && window.currentView.step === 0 && window.currentView.moves[0].length);
    for (const sq of squares.slice(0, -1)) await page.click(`#board [data-square="${sq}"]`);
    const t0 = Date.now();
    await page.click(`#board [data-square="${squares[squares.length - 1]}"]`);
    await page.waitForFunction(() => window.currentView.step === 2 && !window.currentView.thinking, null, { polling: 5, timeout: 120000 });
    console.log(`browser ${game} run ${i}: ${((Date.now() - t0) / 1000).toFixed(3)} s`);
  }
  await b.close();
})();
