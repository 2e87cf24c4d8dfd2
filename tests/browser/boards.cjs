// Plays whole games of chess, Connect Four, Jeson Mor and Dominup (the fixed deal) on the
// `ggp web` page in headless Chromium, every human move made by clicking the board (and, in
// Dominup, a tile of the hand), against the computer at `random`. Saves a screenshot of each
// game mid-way and at the end, at desktop width (1200 px) and at 390 px:
// `web-GAME-{mid,end}-{1200,390}.png` in OUTDIR. Half of the games are clicked at 1200 px and
// half at 390 px; the window is resized for the other width's screenshots.
//
// The human's moves are chosen by a fixed rule (below), and the server's random player is
// seeded (`ggp web --seed 1`), so a run plays the same games every time.
//
// Then it plays 1. e4 against the computer at `medium` (alpha-beta) and checks the thinking
// indicator: every status shown while it thinks counts positions, and the reply says how many
// it searched (`web-chess-medium-1200.png`; `web-chess-thinking-1200.png` too when the page
// showed the indicator by the time it was looked at).
//
// Then it lets the computer play 20 steps of checkers, reversi and hex (sheets of rules/, each
// with its display description), and saves `web-GAME-1200.png`; and the same for hexPie of
// ../shared/games/base, uploaded (no description: its hexagons and edges come from its rules).
//
// Usage: node boards.cjs URL OUTDIR   (run by tests/web.rs, which sets NODE_PATH)
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { chromium } = require("playwright-core");

const [url, outdir] = process.argv.slice(2);

// Waits until the human has a move to make or the game is over.
async function waitOurs(page) {
  await page.waitForFunction(() => {
    const v = window.currentView;
    return v && !v.thinking && (v.terminal || v.moves.some((m) => m.length > 0));
  }, null, { timeout: 60000 });
  return page.evaluate(() => window.currentView);
}

const squareName = (view, [f, r]) => view.board.files[f] + view.board.ranks[r];
const holds = (view, sq) => view.board.cells[sq[1] * view.board.files.length + sq[0]];

// The rule the test plays by: a mate (chess) or a move that wins at once if the notation or
// the marked square tells one, else the capture of the most valuable piece, else a check,
// else a promotion, a check or a pawn move (to end before the 50-move rule), else the first.
// Only moves that can be made by clicking the board are considered.
const VALUE = { q: 9, r: 5, b: 3, n: 3, p: 1 };
function choose(view, role) {
  const moves = view.moves[role].filter((m) => m.from.length + m.to.length > 0);
  const marks = ((view.display || {}).marks || []);
  const onMark = (sq) => marks.includes(squareName(view, sq));
  const taken = (m) => m.from.length ? Math.max(0, ...m.to.map((s) => holds(view, s))
    .filter((c) => c).map((c) => VALUE[c.label.slice(-1)] || 1)) : 0;
  const best = moves.reduce((b, m) => (taken(m) > (b ? taken(b) : 0) ? m : b), null);
  return moves.find((m) => (m.notation || "").endsWith("#"))
    || moves.find((m) => m.from.some(onMark))
    || moves.find((m) => m.to.some(onMark))
    || best
    || moves.find((m) => (m.notation || "").includes("=Q"))
    || moves.find((m) => (m.notation || "").endsWith("+"))
    || moves.find((m) => /^[a-h]/.test(m.notation || ""))
    || moves[0];
}

async function clickSquare(page, view, sq) {
  await page.click(`#board [data-square="${squareName(view, sq)}"]`);
}

// Makes move `m` by clicking: from then to, or the square it fills.
async function clickMove(page, view, m) {
  if (m.from.length) await clickSquare(page, view, m.from[0]);
  await clickSquare(page, view, m.to[0]);
}

// A Dominup placement: the tile in the hand, then its two squares, the hand's first half
// first. Returns the move's term.
async function clickTile(page, view, role) {
  const tiles = await page.evaluate((role) => tileMoves(currentView, currentView.moves[role])
    .map((t) => ({ term: t.m.term, halves: t.halves, squares: t.squares })), role);
  if (!tiles.length) return null;
  const buttonFor = async (t) => await page.$(`#hands button[data-tile="${t.halves.join("-")}"]`)
    || await page.$(`#hands button[data-tile="${[...t.halves].reverse().join("-")}"]`);
  const shownTiles = [];
  for (const t of tiles) if (await buttonFor(t)) shownTiles.push(t);
  if (!shownTiles.length) throw new Error(`no hand tile for ${tiles[0].term}`);
  // Prefer a climb (both squares covered), else the first placement.
  const t = shownTiles.find((t) => t.squares.every((s) => holds(view, s))) || shownTiles[0];
  const button = await buttonFor(t);
  const shown = (await button.getAttribute("data-tile")).split("-");
  await button.click();
  const [first, second] = shown[0] === t.halves[0] ? t.squares : [t.squares[1], t.squares[0]];
  await clickSquare(page, view, first);
  await clickSquare(page, view, second);
  return t.term;
}

async function start(page, game, seats) {
  await page.goto(url);
  await page.waitForSelector(`#game option[value="${game}"]`, { state: "attached" });
  await page.selectOption("#game", game);
  await page.waitForSelector(`#seats[data-game="${game}"]`, { state: "attached" });
  for (let i = 0; i < seats.length; i++) await page.selectOption("#seat-" + i, seats[i]);
  await page.fill("#pause", "0");
  await page.click("#start");
}

async function shoot(page, game, moment, width, other) {
  const shots = [];
  for (const w of [width, other]) {
    await page.setViewportSize({ width: w, height: 900 });
    await page.waitForTimeout(150);
    const file = path.join(outdir, `web-${game}-${moment}-${w}.png`);
    await page.screenshot({ path: file, fullPage: true });
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    if (wide > w + 1) throw new Error(`${game}: the page is ${wide}px wide at ${w}px`);
    shots.push(file);
  }
  await page.setViewportSize({ width, height: 900 });
  return shots;
}

// GDL-II with one person (the random deal of Dominup): the view is that role's, and neither it
// nor the page ever shows another role's hand or another role's move (nature's deal included).
async function checkHidden(page, game, view, human) {
  const me = view.roles[human];
  const problem = (what) => { throw new Error(`${game}, step ${view.step}: ${what}`); };
  if (view.viewer !== me) problem(`viewer ${view.viewer}, not ${me}`);
  const hands = true;
  for (const [rel, args] of view.facts) {
    if (hands && rel === "hand" && args.some((a) => a.split(" ")[0] !== me)) problem(`hand facts ${args}`);
  }
  if (view.history.some(([, role]) => role !== human)) problem(`history ${JSON.stringify(view.history)}`);
  if (view.last.some(([role]) => role !== human)) problem(`last ${JSON.stringify(view.last)}`);
  const text = await page.evaluate(() => ["hands", "history", "last", "facts"]
    .map((id) => document.getElementById(id).textContent).join("\n"));
  if (/deal/.test(text)) problem("a deal move shown");
  for (const other of view.roles) {
    if (hands && other !== me && text.includes(other + "'s hand")) problem(`${other}'s hand shown`);
  }
  return view.percepts.length > 0
    && (await page.evaluate(() => document.getElementById("seen").textContent)).includes(view.percepts[0]);
}

// Plays `game` to the end, the human in seat `human`, clicking at `width`.
async function play(page, game, seats, width, midAfter) {
  const began = Date.now();
  await page.setViewportSize({ width, height: 900 });
  await start(page, game, seats);
  const other = width === 1200 ? 390 : 1200;
  let moves = 0, view, perceived = false;
  // The GDL-II view shows only what the person's role saw (GGP_CHECK_HIDDEN=0 turns the
  // check off).
  const hidden = game === "dominup" && process.env.GGP_CHECK_HIDDEN !== "0";
  const human = seats.indexOf("human");
  for (;;) {
    view = await waitOurs(page);
    if (hidden && await checkHidden(page, game, view, human)) perceived = true;
    if (view.terminal) break;
    if (moves === midAfter) await shoot(page, game, "mid", width, other);
    const role = view.moves.findIndex((m) => m.length > 0);
    let term;
    if (view.display && view.display.place) {
      term = await clickTile(page, view, role);
      if (!term) {
        // Nothing to place: the one move left (a pass) is a button.
        const m = view.moves[role][0];
        await page.click(`#moves button[data-index="${m.index}"]`);
        term = m.term;
      }
    } else {
      const m = choose(view, role);
      await clickMove(page, view, m);
      // Several moves on the same squares (a promotion): the page asks which one.
      await page.waitForFunction((step) => window.currentView.step > step
        || document.querySelector("#moves button[data-offer]"), view.step);
      const offered = await page.$(`#moves button[data-offer][data-index="${m.index}"]`);
      if (offered) await offered.click();
      term = m.term;
    }
    await page.waitForFunction((step) => window.currentView.step > step, view.step);
    const last = await page.evaluate(() => window.currentView.history);
    const mine = last.filter(([step]) => step === view.step);
    if (!mine.length) throw new Error(`${game}: move ${term} left no history`);
    const said = await page.evaluate(() => document.getElementById("last").textContent);
    if (/undefined|searched 0 /.test(said)) throw new Error(`${game}: last move line "${said}"`);
    moves++;
    if (moves > 300) throw new Error(`${game}: not over after 300 moves`);
  }
  // In these turn games one role moves at a time: one history entry per step (a forced
  // reply is not written with the other role's noop beside it).
  if (hidden && !perceived) throw new Error(`${game}: no percept ever shown`);
  const steps = view.history.map(([step]) => step);
  if (new Set(steps).size !== steps.length) throw new Error(`${game}: history ${JSON.stringify(view.history)}`);
  const shots = await shoot(page, game, "end", width, other);
  const text = await page.evaluate(() => [document.getElementById("result").textContent,
                                           document.getElementById("ending").textContent].join(" "));
  console.log(`${game}: ${moves} moves clicked at ${width}px, step ${view.step}, ${text.trim()}, `
    + `${((Date.now() - began) / 1000).toFixed(1)} s; ${shots.join(" ")}`);
  return view;
}

// Chess against `medium`: 1. e4 clicked; the statuses shown until the reply are recorded
// as they change.
async function thinking(page) {
  await page.setViewportSize({ width: 1200, height: 900 });
  await start(page, "chess", ["human", "medium"]);
  let view = await waitOurs(page);
  await page.evaluate(() => {
    window.statuses = [];
    new MutationObserver(() => window.statuses.push(document.getElementById("status").textContent))
      .observe(document.getElementById("status"), { childList: true, characterData: true, subtree: true });
  });
  const e4 = view.moves[0].find((m) => m.notation === "e4");
  await clickMove(page, view, e4);
  await page.waitForFunction(() => window.currentView.step > 0);
  const shots = [];
  if (await page.evaluate(() => window.currentView.thinking)) {
    shots.push(path.join(outdir, "web-chess-thinking-1200.png"));
    await page.screenshot({ path: shots[0], fullPage: true });
  }
  view = await waitOurs(page);
  const file = path.join(outdir, "web-chess-medium-1200.png");
  await page.screenshot({ path: file, fullPage: true });
  shots.push(file);
  const statuses = await page.evaluate(() => window.statuses.filter((s) => s.startsWith("Computer thinking")));
  const last = await page.evaluate(() => document.getElementById("last").textContent);
  for (const s of statuses) {
    if (!/^Computer thinking \(black\)(: [\d,]+ positions so far)?$/.test(s)) throw new Error(`status ${s}`);
  }
  const searched = /the computer searched ([\d,]+) positions/.exec(last);
  if (!searched || Number(searched[1].replace(/,/g, "")) <= 0) throw new Error(`last move line: ${last}`);
  console.log(`chess-medium: ${statuses.length} thinking statuses (${statuses.slice(-1)[0] || "none"}), `
    + `${last}; ${shots.join(" ")}`);
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
    const games = (process.env.GGP_BOARDS || "chess,connectFour,jesonMor,dominupFixed,dominup").split(",");
    const plan = {
      chess: [["human", "random"], 1200, 6],
      connectFour: [["human", "random"], 390, 2],
      jesonMor: [["human", "random"], 390, 4],
      dominupFixed: [["random", "human"], 1200, 4],
      dominup: [["human", "random", "random"], 390, 3],
    };
    if (!process.env.GGP_BOARDS) await thinking(page);
    for (const game of games) {
      const [seats, width, mid] = plan[game];
      const view = await play(page, game, seats, width, mid);
      if (!view.result) throw new Error(`${game}: no result shown`);
    }
    if (!process.env.GGP_BOARDS) {
      // What each description draws: crowned discs, stones, hexagons.
      const expect = { checkers: "circle", reversi: "circle", hex: "polygon" };
      for (const game of Object.keys(expect)) {
        await page.setViewportSize({ width: 1200, height: 900 });
        await start(page, game, ["random", "random"]);
        // The server takes milliseconds a step; the page's drawing under a load of 6 on two
        // cores (a build beside the test) took more than 60 s for twenty.
        await page.waitForFunction(() => window.currentView && (window.currentView.step >= 20 || window.currentView.terminal), null, { timeout: 240000 });
        const view = await page.evaluate(() => window.currentView);
        if (!view.display) throw new Error(`${game}: no display description`);
        const shapes = await page.$$eval(`#board ${expect[game]}`, (e) => e.length);
        const file = path.join(outdir, `web-${game}-1200.png`);
        await page.screenshot({ path: file, fullPage: true });
        console.log(`${game}: step ${view.step}, ${shapes} ${expect[game]} elements, ${file}`);
        if (shapes < 10) throw new Error(`${game}: ${shapes} ${expect[game]} elements`);
      }
      // hexPie, uploaded (no display description): hexagons by shape, and the edges each
      // side connects found from ended games, drawn in its stones' colours.
      const pie = path.join(__dirname, "../../../shared/games/base/hexPie.kif");
      if (fs.existsSync(pie)) {
        await page.goto(url);
        await page.setInputFiles("#upload", pie);
        await page.waitForSelector('#game option[value="upload:hexPie"]', { state: "attached" });
        await start(page, "upload:hexPie", ["random", "random"]);
        await page.waitForFunction(() => window.currentView && (window.currentView.step >= 20 || window.currentView.terminal), null, { timeout: 60000 });
        const view = await page.evaluate(() => window.currentView);
        const edges = await page.$$eval("#board line", (e) => e.map((l) => l.getAttribute("stroke")));
        const file = path.join(outdir, "web-hexPie-1200.png");
        await page.screenshot({ path: file, fullPage: true });
        console.log(`hexPie: step ${view.step}, edges ${JSON.stringify(view.board.edges)}, lines ${edges.join(" ")}, ${file}`);
        if (view.board.hex == null || edges.length !== 4 || new Set(edges).size !== 2) throw new Error("hexPie: no hexagons or edges");
      }
    }
    if (errors.length) throw new Error("page errors: " + errors.join("; "));
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

const timer = setTimeout(() => { console.error("timed out"); process.exit(3); }, 480000);
main().then(() => { clearTimeout(timer); }, (e) => { console.error(e); process.exit(1); });
