// Random playouts of a rule sheet made by the Dresden GameController's reasoner (Schiffel's
// GameController with the JavaProver of Stanford's CS227b team Iago: the reasoner that referees
// in ../shared/sparring/gamecontroller/run), printed in the trace format of
// ../shared/games/README.md.
// Usage (through the script bench/referee/reftrace):
//   DresdenTrace GAME.kif [--playouts N] [--seed S] [--max-steps M]
//
// The sheet is loaded as the GameController's own `run` loads it
// (ReasonerFactory.createGameFromFile, GDL-II), every playout starting from a fresh
// Game.getInitialState() as a match does. `random` is an ordinary role here; after each DOES line,
// one SEES line per role gives the percepts the GameController would send that role. The JavaProver uppercases every symbol; each symbol is printed as the sheet spells it,
// through a table from the uppercased spelling to the sheet's. A sheet with two spellings of one
// symbol that differ only in case (`a` and `A`) cannot be traced: the GameController reads them
// as one symbol, so DresdenTrace refuses it (exit 3).
//
// GOALS: the GameController itself calls GameSimulator.GetGoalValue, which answers 0 where no goal
// value holds and the first value found where several hold. The trace shows ERR in both cases (as
// the format asks), from the same prover's GetGoalValues, and says on stderr what the referee
// would have awarded.
//
// Where an unsafe sheet makes the prover answer a term with a variable in it, the variable is
// printed as `?_VAR<number>` (its internal name) and stderr says so.

import java.io.BufferedOutputStream;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;

import cs227b.teamIago.gameProver.GameSimulator;
import cs227b.teamIago.resolver.ExpList;
import cs227b.teamIago.util.GameState;
import tud.gamecontroller.GDLVersion;
import tud.gamecontroller.game.FluentInterface;
import tud.gamecontroller.game.MoveInterface;
import tud.gamecontroller.game.RoleInterface;
import tud.gamecontroller.game.impl.Game;
import tud.gamecontroller.game.impl.JointMove;
import tud.gamecontroller.game.impl.State;
import tud.gamecontroller.game.javaprover.Reasoner;
import tud.gamecontroller.game.javaprover.ReasonerFactory;
import tud.gamecontroller.game.javaprover.Term;

@SuppressWarnings({"unchecked", "rawtypes"})
public final class DresdenTrace {
    /** Uppercased symbol -> the sheet's spelling. */
    static final Map<String, String> spelling = new HashMap<>();
    /** Symbols the prover printed that the sheet does not hold (warned about once each). */
    static final TreeSet<String> unknown = new TreeSet<>();
    /** Variables in the prover's answers (warned about at the end). */
    static final TreeSet<String> variables = new TreeSet<>();

    public static void main(String[] args) throws Exception {
        String sheet = null;
        int playouts = 1, maxSteps = 1000;
        long seed = 0;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--playouts": playouts = Integer.parseInt(args[++i]); break;
                case "--seed": seed = Long.parseLong(args[++i]); break;
                case "--max-steps": maxSteps = Integer.parseInt(args[++i]); break;
                default:
                    if (sheet != null || args[i].startsWith("--")) usage();
                    sheet = args[i];
            }
        }
        if (sheet == null) usage();
        readSpellings(new String(Files.readAllBytes(Paths.get(sheet)), StandardCharsets.ISO_8859_1));

        PrintStream out = new PrintStream(new BufferedOutputStream(System.out, 1 << 16), false);
        int p = 0, step = 0;
        try {
            // As GcMatch (the `run` script's main class) loads it, as GDL-II.
            Game game = new ReasonerFactory().createGameFromFile(new java.io.File(sheet), GDLVersion.v2);
            List<RoleInterface> roles = (List<RoleInterface>) game.getOrderedRoles();
            Random random = new Random(seed);

            for (p = 0; p < playouts; p++) {
                out.print("PLAYOUT " + p + "\n");
                // A fresh reasoner per playout, as per match: the prover caches what it proved in
                // the state objects.
                State state = (State) game.getInitialState();
                for (step = 0; ; step++) {
                    out.print("STEP " + step + "\n");
                    // STATE: the facts without their `true` wrapper, sorted as strings.
                    TreeSet<String> facts = new TreeSet<>();
                    for (Object f : state.getFluents()) facts.add(kif(((FluentInterface<Term>) f).getTerm()));
                    out.append("STATE ").append(String.join(" ", facts)).append('\n');

                    if (state.isTerminal()) {
                        out.append("TERMINAL\nGOALS");
                        for (RoleInterface<Term> r : roles) out.append(' ').append(goal(state, r, p, step));
                        out.append('\n');
                        break;
                    }
                    if (step == maxSteps) { out.append("MAXDEPTH\n"); break; }

                    // LEGAL per role, moves sorted (and each once); the random joint move is drawn
                    // from the sorted lists so a seed repeats.
                    JointMove<Term> joint = new JointMove(roles);
                    List<String> does = new ArrayList<>();
                    boolean stuck = false;
                    for (RoleInterface<Term> r : roles) {
                        TreeMap<String, MoveInterface<Term>> moves = new TreeMap<>();
                        for (Object m : state.getLegalMoves(r)) {
                            MoveInterface<Term> move = (MoveInterface<Term>) m;
                            moves.putIfAbsent(kif(move.getTerm()), move);
                        }
                        out.append("LEGAL ").append(kif(r.getTerm()));
                        if (moves.isEmpty()) { out.append(" <NO-LEGAL-MOVES>"); stuck = true; }
                        for (String m : moves.keySet()) out.append(' ').append(m);
                        out.append('\n');
                        if (!moves.isEmpty()) {
                            List<String> keys = new ArrayList<>(moves.keySet());
                            String pick = keys.get(random.nextInt(keys.size()));
                            joint.put(r, moves.get(pick));
                            does.add(pick);
                        }
                    }
                    if (stuck) break;   // no joint move exists: the playout ends here

                    out.append("DOES ").append(String.join(" ", does)).append('\n');
                    // SEES per role: what the GameController sends each role after this joint
                    // move (State.getSeesTerms, the percepts of its PLAY messages), sorted.
                    for (RoleInterface<Term> r : roles) {
                        TreeSet<String> seen = new TreeSet<>();
                        for (Object t : state.getSeesTerms(r, joint)) seen.add(kif((Term) t));
                        out.append("SEES ").append(kif(r.getTerm()));
                        for (String t : seen) out.append(' ').append(t);
                        out.append('\n');
                    }
                    state = state.getSuccessor(joint);
                }
            }
        } catch (Exception | StackOverflowError e) {
            // The reasoner itself failed (a sheet it cannot play): keep the trace so far.
            out.flush();
            StackTraceElement[] at = e.getStackTrace();
            System.err.println("reftrace: the GameController failed in playout " + p + " at step " + step
                + ": " + e + (at.length > 0 ? " at " + at[0] : ""));
            System.exit(1);
        }
        out.flush();
        if (!variables.isEmpty())
            System.err.println("reftrace: the GameController answered terms with variables in them"
                + " (an unsafe sheet), printed as " + variables);
        if (!unknown.isEmpty())
            System.err.println("reftrace: symbols not in the sheet, printed lowercased: " + unknown);
    }

    /**
     * The goal value of a role in a terminal state, or ERR where the prover finds none or
     * several; then says on stderr what the GameController would award (State.getGoalValue).
     */
    static String goal(State state, RoleInterface<Term> role, int p, int step) throws Exception {
        GameSimulator sim = simulator(state);
        TreeSet<String> values = new TreeSet<>();
        ExpList found;
        synchronized (sim) {
            sim.SetGameState((GameState) stateInfo(state));
            found = sim.GetGoalValues(role.getTerm().getExpr());
        }
        if (found != null) for (int i = 0; i < found.size(); i++) values.add(found.get(i).toString());
        String result = values.size() == 1 ? values.first() : "ERR";
        if (values.size() == 1) {
            try { Integer.parseInt(result); } catch (NumberFormatException e) { result = "ERR"; }
        }
        if (result.equals("ERR")) {
            String awarded;
            try { awarded = Integer.toString(state.getGoalValue(role)); }
            catch (RuntimeException e) { awarded = "nothing (" + e + ")"; }
            System.err.println("reftrace: playout " + p + " step " + step + ": " + kif(role.getTerm())
                + " has " + (values.isEmpty() ? "no goal value" : "goal values " + values)
                + "; the GameController awards " + awarded);
        }
        return result;
    }

    static Object field(Object o, Class<?> c, String name) throws ReflectiveOperationException {
        Field f = c.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(o);
    }

    static Object stateInfo(State state) throws ReflectiveOperationException {
        return field(state, State.class, "stateInformation");
    }

    static GameSimulator simulator(State state) throws ReflectiveOperationException {
        Object reasoner = field(state, State.class, "reasoner");
        return (GameSimulator) field(reasoner, Reasoner.class, "gameSim");
    }

    /** Compact KIF with the sheet's spelling of every symbol. */
    static String kif(Term t) {
        StringBuilder b = new StringBuilder();
        kif(t, b);
        return b.toString();
    }

    static void kif(Term t, StringBuilder b) {
        if (t.isVariable()) {
            // An unsafe sheet: the prover answers a term with a variable in it (`Var#(123)`).
            String v = "?_" + t.getKIFForm().replaceAll("[^0-9A-Za-z]", "");
            variables.add(v);
            b.append(v);
            return;
        }
        List<Term> args = t.getArgs();
        if (t.isConstant() || args == null) { b.append(symbol(t.getKIFForm())); return; }
        b.append('(').append(symbol(t.getName()));
        for (Term a : args) { b.append(' '); kif(a, b); }
        b.append(')');
    }

    static String symbol(String upper) {
        String s = spelling.get(upper);
        if (s != null) return s;
        unknown.add(upper);
        return upper.toLowerCase(Locale.ROOT);
    }

    /**
     * The table from uppercased symbol to the sheet's spelling: every token of the sheet outside
     * `;` comments that is not a variable. Two spellings of one symbol make the trace impossible.
     */
    static void readSpellings(String text) {
        Map<String, TreeSet<String>> clashes = new TreeMap<>();
        for (String line : text.split("\r\n|\r|\n")) {
            int c = line.indexOf(';');
            if (c >= 0) line = line.substring(0, c);
            for (String tok : line.split("[\\s()]+")) {
                if (tok.isEmpty() || tok.startsWith("?")) continue;
                String up = tok.toUpperCase(Locale.ROOT);
                String had = spelling.putIfAbsent(up, tok);
                if (had != null && !had.equals(tok))
                    clashes.computeIfAbsent(up, k -> new TreeSet<>(List.of(had))).add(tok);
            }
        }
        if (!clashes.isEmpty()) {
            System.err.println("reftrace: the GameController uppercases every symbol, so it reads these"
                + " spellings as one symbol each and no trace can give the sheet's spelling: "
                + clashes.values());
            System.exit(3);
        }
    }

    static void usage() {
        System.err.println("usage: reftrace --dresden GAME.kif [--playouts N] [--seed S] [--max-steps M]");
        System.exit(2);
    }
}
