// Starts chess, Connect Four and Jeson Mor on the `ggp web` page in headless Chromium, plays
// a few moves by clicking (the computer answers at `random`), and saves a screenshot of each
// at desktop width and at 390 px.
//
// Usage: node boards.cjs URL OUTDIR   (run by tests/web.rs, which sets NODE_PATH)
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { chromium } = require("playwright-core");

const [url, outdir] = process.argv.slice(2);

async function waitOurs(page) {
  await page.waitForFunction(() => {
    const v = window.currentView;
    return v && !v.thinking && (v.terminal || v.moves.some((m) => m.length > 0));
  });
  return page.evaluate(() => window.currentView);
}

// Clicks the squares of the human's first legal move (from, then to).
async function clickMove(page, view) {
  const role = view.moves.findIndex((m) => m.length > 0);
  const m = view.moves[role][Math.floor(view.moves[role].length / 2)];
  const name = ([f, r]) => view.board.files[f] + view.board.ranks[r];
  if (m.from.length) await page.click(`[data-square="${name(m.from[0])}"]`);
  await page.click(`[data-square="${name(m.to[0])}"]`);
  await page.waitForFunction((step) => window.currentView.step > step, view.step);
}

async function play(page, game, width, plies) {
  await page.setViewportSize({ width, height: 900 });
  await page.goto(url);
  await page.waitForSelector(`#game option[value="${game}"]`, { state: "attached" });
  await page.selectOption("#game", game);
  await page.waitForSelector("#seat-1");
  await page.selectOption("#seat-0", "human");
  await page.selectOption("#seat-1", "random");
  await page.click("#start");
  for (let i = 0; i < plies; i++) {
    const view = await waitOurs(page);
    if (view.terminal) break;
    await clickMove(page, view);
  }
  const view = await waitOurs(page);
  const file = path.join(outdir, `web-${game}-${width}.png`);
  await page.screenshot({ path: file, fullPage: true });
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  console.log(`${game} at ${width}px: step ${view.step}, page ${wide}px wide, history ${JSON.stringify(view.history.slice(0, 4))}, ${file}`);
  if (wide > width + 1) throw new Error(`${game}: the page is ${wide}px wide at ${width}px`);
}

async function main() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "ggp-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync"],
  });
  try {
    const page = context.pages()[0] || (await context.newPage());
    page.setDefaultTimeout(30000);
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    for (const width of [1200, 390]) {
      await play(page, "chess", width, 4);
      await play(page, "connectFour", width, 5);
      await play(page, "jesonMor", width, 3);
    }
    if (errors.length) throw new Error("page errors: " + errors.join("; "));
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

const timer = setTimeout(() => { console.error("timed out"); process.exit(3); }, 150000);
main().then(() => { clearTimeout(timer); }, (e) => { console.error(e); process.exit(1); });
