// Plays each rule sheet for a few steps under a real referee, with `ggp serve` processes as
// every player, and prints one line per sheet:
//   sheet  roles  steps-played  status  errors  # seconds[; note]
// Referee: ggp-base's GameServer (ProverStateMachine), or with --dresden the Dresden
// GameController (GDL-II). Usage (through the script bench/referee/sweep, which says more):
//   Sweep [--steps N] [--start S] [--play P] [--out FILE] [--dresden] SHEET.kif|DIR...
// Environment: GGP (the ggp binary), GGP_SERVE_ARGS (more arguments of `ggp serve`), GAMECONTROLLER (the Dresden controller's run script).

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.ggp.base.server.GameServer;
import org.ggp.base.util.files.FileUtils;
import org.ggp.base.util.game.Game;
import org.ggp.base.util.gdl.grammar.Gdl;
import org.ggp.base.util.http.HttpRequest;
import org.ggp.base.util.match.Match;
import org.ggp.base.util.statemachine.MachineState;
import org.ggp.base.util.statemachine.Role;

public final class Sweep {
    static int steps = 5, startClock = 10, playClock = 2;
    static boolean dresden = false;
    static String ggp, controller;
    static File logs;                                   // players' logs, referee output
    static PrintStream out, results;                    // our stdout; the --out file
    static final ByteArrayOutputStream captured = new ByteArrayOutputStream();
    // One `ggp serve` per seat: its process, its port, and (ggp-base mode) the port of the
    // relay in front of it, which records the player's reply to START (GameServer ignores it).
    static final List<Process> players = new ArrayList<>();
    static final List<Integer> playerPorts = new ArrayList<>(), relayPorts = new ArrayList<>();
    static final List<String> startReplies = new ArrayList<>();   // per seat, this match's
    static volatile GameServer current;                 // the match being played (ggp-base)

    public static void main(String[] args) throws Exception {
        // Arguments: options, then sheets or directories (their .kif files, sorted).
        String outFile = null;
        List<File> sheets = new ArrayList<>();
        boolean stepsGiven = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--steps": steps = Integer.parseInt(args[++i]); stepsGiven = true; break;
                case "--start": startClock = Integer.parseInt(args[++i]); break;
                case "--play": playClock = Integer.parseInt(args[++i]); break;
                case "--out": outFile = args[++i]; break;
                case "--dresden": dresden = true; break;
                default:
                    File f = new File(args[i]);
                    if (args[i].startsWith("--") || !f.exists()) {
                        System.err.println("sweep: unknown option or missing file: " + args[i]);
                        System.exit(2);
                    }
                    File[] in = f.isDirectory() ? f.listFiles((d, n) -> n.endsWith(".kif")) : new File[] {f};
                    Arrays.sort(in);
                    sheets.addAll(Arrays.asList(in));
            }
        }
        if (dresden && !stepsGiven) steps = 0;          // GDL-II sheets: play to the end
        ggp = System.getenv().getOrDefault("GGP", "ggp");
        controller = System.getenv("GAMECONTROLLER");
        logs = outFile != null ? new File(outFile + ".logs") : Files.createTempDirectory("sweep").toFile();
        logs.mkdirs();
        if (outFile != null) results = new PrintStream(new FileOutputStream(outFile), true);

        // ggp-base prints stack traces and log lines: capture them per sheet (they go to
        // LOGS/referee.log, and the first exception becomes the note of a failed sheet).
        out = System.out;
        PrintStream capture = new PrintStream(captured, true);
        System.setOut(capture);
        System.setErr(capture);

        // Start one player per seat of the largest game (roles other than `random`).
        int seats = 0;
        for (File s : sheets) seats = Math.max(seats, playerRoles(rolesOf(s)).size());
        Runtime.getRuntime().addShutdownHook(new Thread(() -> players.forEach(Process::destroy)));
        for (int k = 0; k < seats; k++) {
            players.add(null); playerPorts.add(0); startReplies.add(null);
            startPlayer(k);
            if (!dresden) relayPorts.add(relay(k));
        }
        System.err.flush();
        out.println("# " + sheets.size() + " sheets, " + seats + " players (" + ggp + "), "
            + (dresden ? "Dresden GameController" : "ggp-base GameServer") + ", clocks "
            + startClock + "/" + playClock + " s, " + (steps == 0 ? "to the end" : steps + " steps")
            + ", logs in " + logs);

        // Play every sheet; print and record its line.
        long began = System.currentTimeMillis();
        Map<String, Integer> count = new LinkedHashMap<>();
        for (String s : new String[] {"ok", "ended", "refused", "referee-failed"}) count.put(s, 0);
        int withErrors = 0;
        for (File sheet : sheets) {
            long t0 = System.currentTimeMillis();
            long[] logFrom = new long[seats];            // where each player's log stood
            for (int k = 0; k < seats; k++) logFrom[k] = new File(logs, "player" + k + ".log").length();
            String[] r;                                  // roles, steps, status, errors, note
            try {
                r = dresden ? playDresden(sheet) : playGgpBase(sheet);
            } catch (Exception | StackOverflowError e) {
                r = new String[] {"?", "0", "referee-failed", "", "sweep: " + e};
            }
            // A player that died is restarted for the next sheet, and said so. The others
            // must be free (INFO says `available`) before the next START: ggp-base's abort()
            // leaves its ABORT requests in flight.
            for (int k = 0; k < seats; k++) {
                if (players.get(k).isAlive() && !idle(k)) {
                    r[4] = (r[4].isEmpty() ? "" : r[4] + "; ") + "player " + k + " still busy 5 s after the match: restarted";
                    players.get(k).destroy();
                    players.get(k).waitFor();
                    startPlayer(k);
                }
                if (!players.get(k).isAlive()) {
                    r[4] = (r[4].isEmpty() ? "" : r[4] + "; ") + "player " + k + " died (see " + new File(logs, "player" + k + ".log") + ")";
                    startPlayer(k);
                }
            }
            // GDL-II: the steps at which a player's belief held no state that fits every
            // percept (its tracker warns once a step), and the moves its search chose that
            // its tracker's belief did not hold legal.
            int lost = 0, rejected = 0;
            for (int k = 0; k < seats; k++) {
                String text = Files.readString(new File(logs, "player" + k + ".log").toPath(), StandardCharsets.ISO_8859_1);
                for (String l : text.substring((int) Math.min(logFrom[k], text.length())).split("\n")) {
                    if (l.contains("no state fits every percept")) lost++;
                    if (l.contains("the search chose the illegal move")) rejected++;
                }
            }
            if (lost > 0) r[4] = (r[4].isEmpty() ? "" : r[4] + "; ") + "belief lost at " + lost + " player-steps";
            if (rejected > 0) r[4] = (r[4].isEmpty() ? "" : r[4] + "; ") + rejected + " searched moves not the tracker's";
            String line = sheet.getName() + "  " + r[0] + "  " + r[1] + "  " + r[2] + "  "
                + (r[3].isEmpty() ? "-" : r[3]) + "  # " + (System.currentTimeMillis() - t0 + 500) / 1000 + " s"
                + (r[4].isEmpty() ? "" : "; " + r[4]);
            out.println(line);
            out.flush();
            if (results != null) results.println(line);
            count.merge(r[2], 1, Integer::sum);
            if (!r[3].isEmpty()) withErrors++;
            // What the referee printed goes to the referee log, under the sheet's name.
            synchronized (captured) {
                try (FileOutputStream log = new FileOutputStream(new File(logs, "referee.log"), true)) {
                    log.write(("== " + sheet + "\n").getBytes(StandardCharsets.UTF_8));
                    captured.writeTo(log);
                }
                captured.reset();
            }
        }

        // Summary.
        String summary = "# sheets " + sheets.size() + ", ok " + count.get("ok") + ", ended "
            + count.get("ended") + ", refused " + count.get("refused") + ", referee-failed "
            + count.get("referee-failed") + ", with errors of ours " + withErrors
            + " (" + (System.currentTimeMillis() - began) / 1000 + " s)";
        out.println(summary);
        if (results != null) results.println(summary);
        players.forEach(Process::destroy);
        System.exit(0);
    }

    /** One match under ggp-base's GameServer; returns roles, steps, status, errors, note. */
    static String[] playGgpBase(File sheet) throws Exception {
        // Load the sheet as ggp-base's game repositories do; null rules = it did not parse.
        Game game = Game.createEphemeralGame(Game.preprocessRulesheet(FileUtils.readFileAsString(sheet)));
        List<Gdl> rules = game.getRules();
        if (rules == null) return new String[] {"?", "0", "referee-failed", "", "ggp-base cannot parse the sheet"};
        Role[] roles = Role.computeRoles(rules);

        // The match: no preview, our clocks; ggp-base aborts it itself after `limit` moves.
        int limit = steps == 0 ? 1000 : steps;
        String id = "sweep." + sheet.getName().replace(".kif", "") + "." + System.currentTimeMillis();
        Match match = new Match(id, -1, startClock, playClock, limit, game);
        // Seats: role i is played by the next player (through its relay), `random` by the server.
        List<String> hosts = new ArrayList<>();
        List<Integer> ports = new ArrayList<>();
        int[] seatOf = new int[roles.length];
        for (int i = 0, k = 0; i < roles.length; i++) {
            seatOf[i] = isRandom(roles[i].toString()) ? -1 : k++;
            hosts.add("127.0.0.1");
            ports.add(seatOf[i] < 0 ? 9 : relayPorts.get(seatOf[i]));
        }
        GameServer server;
        try {
            server = new GameServer(match, hosts, ports);   // builds the prover, initial state
        } catch (Exception | StackOverflowError e) {
            return new String[] {"" + roles.length, "0", "referee-failed", "", "ggp-base's prover failed on the sheet: " + e};
        }
        for (int i = 0; i < roles.length; i++) if (seatOf[i] < 0) server.makePlayerPlayRandomly(i);

        // Run it (the relays abort it if a player refuses START). Give up if ggp-base itself
        // is too slow: the deadline allows every clock in full plus two minutes.
        synchronized (startReplies) { for (int k = 0; k < startReplies.size(); k++) startReplies.set(k, null); }
        current = server;
        server.setDaemon(true);
        server.start();
        long deadline = System.currentTimeMillis() + 1000L * (startClock + limit * (playClock + 1) + 120);
        boolean tooSlow = false;
        while (server.isAlive()) {
            server.join(200);
            if (!tooSlow && System.currentTimeMillis() > deadline) { tooSlow = true; server.abort(); }
            if (tooSlow && System.currentTimeMillis() > deadline + 10_000) { kill(server); break; }
        }
        current = null;

        // Steps played, and our errors from the match's error history (entry 0: START;
        // entry i: the PLAY that made state i). `random` is played by the server itself.
        Map<String, List<Integer>> errorSteps = new LinkedHashMap<>();
        List<List<String>> history = match.getErrorHistory();
        for (int i = 0; i < history.size(); i++)
            for (int r = 0; r < roles.length; r++)
                if (seatOf[r] >= 0 && !history.get(i).get(r).isEmpty())
                    errorSteps.computeIfAbsent(roles[r] + ":" + history.get(i).get(r), e -> new ArrayList<>()).add(i);
        List<String> errors = condense(errorSteps);
        String played = "" + match.getMoveHistory().size(), err = String.join(", ", errors);
        String refused = refusal(roles, seatOf, history.isEmpty() ? List.of() : history.get(0));

        // Status. A match neither completed nor aborted was ended by an exception inside
        // GameServer.run() (no legal move, no goal value...): ggp-base's failure, not ours.
        String[] r;
        if (refused != null) r = new String[] {"refused", refused};
        else if (tooSlow) r = new String[] {"referee-failed", "ggp-base took too long (its prover is too slow for the sheet?)"};
        else if (match.isCompleted()) r = new String[] {"ended", "goals " + match.getGoalValues()};
        else if (match.isAborted() && !server.getStateMachine().isTerminal(new MachineState(match.getMostRecentState()))) r = new String[] {"ok", ""};
        else if (match.isAborted()) r = new String[] {"ended", "terminal at the move limit, where ggp-base aborts without STOP"};
        else r = new String[] {"referee-failed", "ggp-base stopped: " + firstException()};
        if (!match.isCompleted() && !match.isAborted()) server.abort();   // frees the players
        return new String[] {"" + roles.length, played, r[0], err, r[1]};
    }

    /** Errors as ROLE@STEP:ERR, or ROLE@FIRST-LAST:ERR xN when one error repeats (key: ROLE:ERR). */
    static List<String> condense(Map<String, List<Integer>> errorSteps) {
        List<String> errors = new ArrayList<>();
        errorSteps.forEach((key, at) -> {
            int colon = key.indexOf(':');
            String first = show(at.get(0)), last = show(at.get(at.size() - 1));
            errors.add(key.substring(0, colon) + "@" + (at.size() == 1 ? first : first + "-" + last)
                + key.substring(colon) + (at.size() == 1 ? "" : " x" + at.size()));
        });
        return errors;
    }

    static String show(int step) { return step < 0 ? "?" : step == 9999 ? "stop" : "" + step; }

    /** Why START was refused (a reply other than ready, or TO/CE in the START errors), or null.
     *  A player whose reply never came (no relay record) is caught by its START error. */
    static String refusal(Role[] roles, int[] seatOf, List<String> startErrors) {
        synchronized (startReplies) {
            for (int i = 0; i < roles.length; i++) {
                if (seatOf[i] < 0) continue;
                String reply = startReplies.get(seatOf[i]);
                if (reply != null && !reply.equalsIgnoreCase("ready"))
                    return roles[i] + (reply.isEmpty() ? " closed the connection without answering START"
                        : " answered START with \"" + shorten(reply) + "\"");
                if (!startErrors.isEmpty() && !startErrors.get(i).isEmpty())
                    return roles[i] + " did not answer START in time (" + startErrors.get(i) + ")";
            }
        }
        return null;
    }

    /** One match under the Dresden GameController; returns roles, steps, status, errors, note. */
    static String[] playDresden(File sheet) throws Exception {
        // Its command line: one HOST PORT NAME per role but `random`, named after the role.
        List<String> roles = rolesOf(sheet), ours = playerRoles(roles);
        String id = "sweep." + sheet.getName().replace(".kif", "").toLowerCase() + "." + System.currentTimeMillis();
        List<String> cmd = new ArrayList<>(List.of(controller, "--seed", "1", "--match-id", id));
        if (steps > 0) cmd.addAll(List.of("--max-steps", "" + steps));
        cmd.addAll(List.of(sheet.getPath(), "" + startClock, "" + playClock));
        for (int k = 0; k < ours.size(); k++) cmd.addAll(List.of("127.0.0.1", "" + playerPorts.get(k), ours.get(k)));

        // Run it, its log kept per sheet. Once its PLAYs begin, the START replies are known:
        // a refusal stops it there. The deadline allows every clock in full, the controller's
        // half-second pauses and two minutes.
        File log = new File(logs, sheet.getName() + ".dresden.log"), err = new File(logs, sheet.getName() + ".dresden.err");
        Process gc = new ProcessBuilder(cmd).redirectOutput(log).redirectError(err).start();
        long deadline = System.currentTimeMillis() + 1000L * (startClock + (steps == 0 ? 1000 : steps) * (playClock + 2) + 120);
        String refused = null;
        boolean tooSlow = false, startKnown = false;
        while (!gc.waitFor(200, TimeUnit.MILLISECONDS)) {
            if (!startKnown) {
                Object[] scan = scanLog(log, ours);
                startKnown = (boolean) scan[1];
                refused = (String) scan[2];
                if (refused != null) gc.destroy();
            }
            if (System.currentTimeMillis() > deadline) { tooSlow = true; gc.destroy(); }
        }
        Object[] scan = scanLog(log, ours);
        if (refused == null) refused = (String) scan[2];
        @SuppressWarnings("unchecked") Map<String, List<String>> phases = (Map<String, List<String>>) scan[3];

        // Its stderr: `ERROR TYPE PLAYER: MESSAGE`. Ours are those naming a player; the step
        // is in the message, or else the phase the log shows for that player's warning.
        Map<String, List<Integer>> errorSteps = new LinkedHashMap<>();
        String failure = null;
        Pattern error = Pattern.compile("^ERROR (\\S+) (\\S+): (.*)$"), stepOf = Pattern.compile("in step (\\d+)"),
                move = Pattern.compile("Illegal move \"(.*?)\"");
        for (String line : Files.readAllLines(err.toPath(), StandardCharsets.ISO_8859_1)) {
            Matcher m = error.matcher(line);
            if (!m.find()) continue;
            String type = m.group(1), who = m.group(2), text = m.group(3);
            if (ours.contains(who)) {
                Matcher st = stepOf.matcher(text), mv = move.matcher(text);
                String code = type.equals("timeout") ? "TO" : type.equals("io_error") ? "CE"
                    : type.equals("illegal_move") ? "IL " + (mv.find() ? mv.group(1) : "?")
                    : type.equals("parsing_error") ? "IL (unparsable)" : type;
                List<String> q = phases.getOrDefault(who, new ArrayList<>());
                String at = st.find() ? st.group(1) : q.isEmpty() ? "?" : q.remove(0);
                errorSteps.computeIfAbsent(who + ":" + code, e -> new ArrayList<>()).add(at.equals("stop") ? 9999 : at.equals("?") ? -1 : Integer.parseInt(at));
            } else if (failure == null && !text.contains("match too long") && !type.equals("aborted")) {
                failure = type + " " + who + ": " + text;
            }
        }

        // Status: exit 0 is a finished match; 1 with `match too long` is our --max-steps.
        int rc = gc.exitValue();
        String status, note = "";
        if (refused != null) { status = "refused"; note = refused; }
        else if (tooSlow) { status = "referee-failed"; note = "the GameController took too long"; }
        else if (rc == 0) { status = "ended"; note = lastLine(log); }
        else if (rc == 1 && failure == null) status = "ok";
        else { status = "referee-failed"; note = failure != null ? shorten(failure) : "exit status " + rc; }
        // A match cut short sends no STOP: free the players with an ABORT (ggp serve takes it).
        if (rc != 0)
            for (int k = 0; k < ours.size(); k++)
                try { HttpRequest.issueRequest("127.0.0.1", playerPorts.get(k), "", "( ABORT " + id + " )", 1000); }
                catch (IOException e) { /* not in that match: fine */ }
        return new String[] {"" + roles.size(), "" + scan[0], status, String.join(", ", condense(errorSteps)), note};
    }

    /** Reads a GameController log: {steps played (`moves:` lines), whether START is over (PLAYs
     *  began), the refusal of START if any (replies before the first PLAY), and per player the
     *  phase of each warning naming it: "0" (START), the step, or "stop"}. */
    static Object[] scanLog(File log, List<String> ours) throws IOException {
        int played = 0;
        String phase = "0";
        Map<String, String> startReply = new LinkedHashMap<>();
        Map<String, List<String>> phases = new LinkedHashMap<>();
        Pattern reply = Pattern.compile("reply from (\\S+): (.*?)(?: after \\d+ms)?$"), step = Pattern.compile("\\): step:(\\d+)$"),
                warning = Pattern.compile("^(?:WARNING|SEVERE)\\(.*remote\\((\\S+?),");
        for (String line : Files.readAllLines(log.toPath(), StandardCharsets.ISO_8859_1)) {
            Matcher m;
            if (line.contains("): moves: ")) played++;
            if (line.contains("Sending stop messages")) phase = "stop";
            else if (line.contains("Sending play messages") && phase.equals("0")) phase = "1";
            if ((m = step.matcher(line)).find() && !phase.equals("0") && !phase.equals("stop")) phase = m.group(1);
            if (phase.equals("0") && (m = reply.matcher(line)).find()) startReply.putIfAbsent(m.group(1), m.group(2).trim());
            if ((m = warning.matcher(line)).find() && !line.contains("in step")) phases.computeIfAbsent(m.group(1), k -> new ArrayList<>()).add(phase);
        }
        String refused = null;
        for (String name : ours) {
            String r = startReply.get(name);
            if (refused == null && !phase.equals("0") && (r == null || !r.equalsIgnoreCase("ready")))
                refused = name + (r == null ? " did not answer START in time" : " answered START with \"" + shorten(r) + "\"");
        }
        return new Object[] {played, !phase.equals("0"), refused, phases};
    }

    /** Starts `ggp serve` for seat k on a free port and waits for its `listening on` line. */
    static void startPlayer(int k) throws Exception {
        File log = new File(logs, "player" + k + ".log");
        long from = log.length();                       // a restarted player appends to its log
        List<String> command = new ArrayList<>(List.of(ggp, "serve", "--port", "0", "--bind", "127.0.0.1", "--threads", "1", "--name", "ggp" + k));
        String extra = System.getenv().getOrDefault("GGP_SERVE_ARGS", "").trim();
        if (!extra.isEmpty()) command.addAll(Arrays.asList(extra.split("\\s+")));
        Process p = new ProcessBuilder(command)
            .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log)).start();
        Pattern listening = Pattern.compile("listening on \\S*:(\\d+)");
        for (int wait = 0; wait < 200 && p.isAlive(); wait++) {
            Matcher m = listening.matcher(Files.readString(log.toPath(), StandardCharsets.ISO_8859_1).substring((int) from));
            if (m.find()) {
                players.set(k, p);
                playerPorts.set(k, Integer.parseInt(m.group(1)));
                return;
            }
            Thread.sleep(50);
        }
        throw new IOException(ggp + " serve did not start: see " + log);
    }

    /** Whether seat k's player says it is available (INFO) within 5 s. */
    static boolean idle(int k) throws InterruptedException {
        for (int tries = 0; tries < 50; tries++) {
            try {
                if (HttpRequest.issueRequest("127.0.0.1", playerPorts.get(k), "", "( INFO )", 1000).contains("available")) return true;
            } catch (IOException e) { /* try again */ }
            Thread.sleep(100);
        }
        return false;
    }

    /** A relay on a free port in front of seat k: passes bytes both ways unchanged, and keeps
     *  the player's reply to a START request for refusal(). */
    static int relay(int k) throws IOException {
        ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        daemon(() -> {
            while (true) {
                try {
                    Socket client = server.accept();
                    daemon(() -> relayOne(client, k));
                } catch (IOException e) { return; }
            }
        });
        return server.getLocalPort();
    }

    static void relayOne(Socket client, int k) {
        ByteArrayOutputStream request = new ByteArrayOutputStream();
        try (client; Socket player = new Socket(InetAddress.getLoopbackAddress(), playerPorts.get(k))) {
            daemon(() -> copy(client, player, request));    // referee -> player
            byte[] reply = player.getInputStream().readAllBytes();   // the player closes after it
            // A reply to START is kept; one other than `ready` aborts the match before the
            // referee reads it, so that no PLAY follows.
            if (bodyOf(request.toString(StandardCharsets.ISO_8859_1)).replaceAll("[\\s(]+", " ").trim().toUpperCase().startsWith("START ")) {
                String answer = bodyOf(new String(reply, StandardCharsets.ISO_8859_1)).trim();
                synchronized (startReplies) { startReplies.set(k, answer); }
                GameServer server = current;
                if (!answer.equalsIgnoreCase("ready") && server != null) server.abort();
            }
            client.getOutputStream().write(reply);
        } catch (IOException e) { /* the player is down, or the referee gave up waiting */ }
    }

    static void copy(Socket from, Socket to, ByteArrayOutputStream tee) {
        try {
            InputStream in = from.getInputStream();
            OutputStream o = to.getOutputStream();
            byte[] buf = new byte[1 << 16];
            for (int n; (n = in.read(buf)) > 0; ) { tee.write(buf, 0, n); o.write(buf, 0, n); o.flush(); }
            to.shutdownOutput();
        } catch (IOException e) { /* one side closed */ }
    }

    /** An HTTP message's body: what follows the first blank line (Sancho's ggp-base ends its
     *  header lines with \n alone, others with \r\n). */
    static String bodyOf(String message) {
        Matcher m = Pattern.compile("\r?\n\r?\n").matcher(message);
        return m.find() ? message.substring(m.end()) : "";
    }

    /** The roles of a sheet in order, read from its `(role NAME)` facts (no ggp-base needed). */
    static List<String> rolesOf(File sheet) throws IOException {
        String text = Files.readString(sheet.toPath(), StandardCharsets.ISO_8859_1).replaceAll(";[^\n]*", "");
        Matcher m = Pattern.compile("\\(\\s*role\\s+([^\\s()?][^\\s()]*)\\s*\\)", Pattern.CASE_INSENSITIVE).matcher(text);
        Set<String> roles = new LinkedHashSet<>();
        while (m.find()) roles.add(m.group(1));
        return new ArrayList<>(roles);
    }

    static List<String> playerRoles(List<String> roles) {
        List<String> ours = new ArrayList<>(roles);
        ours.removeIf(Sweep::isRandom);
        return ours;
    }

    static boolean isRandom(String role) { return role.equalsIgnoreCase("random"); }

    /** The first stack trace's heading in what ggp-base printed (the exception's text). */
    static String firstException() {
        synchronized (captured) {
            String[] lines = captured.toString(StandardCharsets.UTF_8).split("\n");
            for (int i = 0; i + 1 < lines.length; i++)
                if (lines[i + 1].trim().startsWith("at ") && !lines[i].trim().startsWith("at "))
                    return shorten(lines[i].replaceAll(" in \\[\\(.*", " in that state"));
        }
        return "no exception printed (see referee.log)";
    }

    static String lastLine(File f) throws IOException {
        List<String> lines = Files.readAllLines(f.toPath(), StandardCharsets.ISO_8859_1);
        return lines.isEmpty() ? "" : lines.get(lines.size() - 1);
    }

    static String shorten(String s) {
        s = s.replaceAll("\\s+", " ");
        return s.length() > 160 ? s.substring(0, 160) + "..." : s;
    }

    static void daemon(Runnable r) {
        Thread t = new Thread(r);
        t.setDaemon(true);
        t.start();
    }

    /** Last resort for a referee thread stuck in its prover (Thread.stop works up to Java 19). */
    @SuppressWarnings({"deprecation", "removal"})
    static void kill(Thread t) {
        try { t.stop(); } catch (UnsupportedOperationException e) { /* left running as a daemon */ }
    }
}
