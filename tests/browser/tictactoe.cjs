// Plays a full game of ticTacToe against the computer on the `ggp web` page, in Debian's
// headless Chromium, by clicking squares; checks the announced result against the goal values
// and takes a screenshot; replays the game step by step; then drops a Connect Four disc by
// clicking the top of a column.
//
// Usage: node tictactoe.cjs URL SCREENSHOT.png   (run by tests/web.rs, which installs
// playwright-core and Chromium and sets NODE_PATH)
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { chromium } = require("playwright-core");

const [url, screenshot] = process.argv.slice(2);
// The squares our person tries, in order of preference.
const PREFERENCE = ["b2", "a1", "c3", "a3", "c1", "b1", "a2", "c2", "b3"];

async function main() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "ggp-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    const page = context.pages()[0] || (await context.newPage());
    page.setDefaultTimeout(20000);
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(url);
    await page.waitForSelector('#game option[value="ticTacToe"]', { state: "attached" });
    await page.selectOption("#game", "ticTacToe");
    await page.waitForSelector("#seat-1");
    await page.selectOption("#seat-0", "human");
    await page.selectOption("#seat-1", "easy");
    await page.click("#start");

    const state = () => page.evaluate(() => window.currentView);
    for (let turn = 0; turn < 9; turn++) {
      // Wait until it is our move or the game is over.
      await page.waitForFunction(() => {
        const v = window.currentView;
        return v && (v.terminal || v.moves[0].length > 0);
      });
      const view = await state();
      if (view.terminal) break;
      const open = view.moves[0].map((m) => {
        const [f, r] = m.to[0];
        return view.board.files[f] + view.board.ranks[r];
      });
      const square = PREFERENCE.find((s) => open.includes(s));
      if (!square) throw new Error("no preferred square among " + open.join(" "));
      console.log(`step ${view.step}: click ${square}`);
      await page.click(`[data-square="${square}"]`);
      await page.waitForFunction((step) => window.currentView.step > step, view.step);
    }
    await page.waitForFunction(() => window.currentView && window.currentView.terminal);
    const view = await state();
    const announced = (await page.textContent("#result")).trim();
    const [x, o] = view.goals;
    const verdict = x > o ? "x wins" : o > x ? "o wins" : "draw";
    const expected = `Game over: ${verdict} (x ${x}, o ${o})`;
    if (announced !== expected) throw new Error(`announced "${announced}", expected "${expected}"`);
    if (errors.length) throw new Error("page errors: " + errors.join("; "));
    const marks = view.board.cells.filter((c) => c !== null).length;
    if (marks < 5) throw new Error(`only ${marks} marks on a finished board`);
    await page.screenshot({ path: screenshot, fullPage: true });
    console.log(`result: ${announced}`);

    // The finished game replays step by step, ending with the same result.
    await page.click("#replay-this");
    await page.waitForSelector("#replay-view:not(.hidden)");
    const last = view.step;
    if ((await page.textContent("#r-step")) !== `position 0 of ${last}`) throw new Error("replay does not start at 0");
    await page.click("#r-next");
    if ((await page.textContent("#r-step")) !== `position 1 of ${last}`) throw new Error("replay does not step");
    if (!(await page.textContent("#r-last-move")).startsWith("Move: x ")) throw new Error("replay shows no move");
    await page.click("#r-last");
    const replayed = await page.textContent("#r-result");
    if (replayed !== `Result: x ${x}, o ${o}`) throw new Error(`replay result "${replayed}"`);
    console.log(`replayed ${last} moves`);

    // Connect Four: a click anywhere in a column drops a disc to its bottom.
    await page.selectOption("#game", "connectFour");
    await page.waitForSelector('#seat-1');
    await page.selectOption("#seat-0", "human");
    await page.selectOption("#seat-1", "random");
    await page.click("#start");
    await page.waitForFunction(() => window.currentView && window.currentView.game === "connectFour"
      && window.currentView.moves[0].length === 7);
    await page.click('[data-square="d6"]');
    await page.waitForFunction(() => window.currentView.step >= 2 && window.currentView.moves[0].length > 0);
    const four = await state();
    const d1 = four.board.cells[3];
    if (!d1 || d1.text !== "red") throw new Error("the disc did not land on d1: " + JSON.stringify(d1));
    console.log(`connectFour: clicked d6, red on d1, last move ${JSON.stringify(four.last)}`);
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

const timer = setTimeout(() => { console.error("timed out"); process.exit(3); }, 90000);
main().then(() => { clearTimeout(timer); }, (e) => { console.error(e); process.exit(1); });
