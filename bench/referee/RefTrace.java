// Random playouts of a rule sheet made by ggp-base's ProverStateMachine (the reasoner of
// ggp-base's GameServer), printed in the trace format of ../shared/games/README.md.
// Usage (through the script bench/referee/reftrace):
//   RefTrace GAME.kif [--playouts N] [--seed S] [--max-steps M]

import java.io.BufferedOutputStream;
import java.io.File;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import org.ggp.base.util.files.FileUtils;
import org.ggp.base.util.game.Game;
import org.ggp.base.util.gdl.grammar.Gdl;
import org.ggp.base.util.gdl.grammar.GdlSentence;
import org.ggp.base.util.statemachine.MachineState;
import org.ggp.base.util.statemachine.Move;
import org.ggp.base.util.statemachine.Role;
import org.ggp.base.util.statemachine.exceptions.GoalDefinitionException;
import org.ggp.base.util.statemachine.exceptions.MoveDefinitionException;
import org.ggp.base.util.statemachine.implementation.prover.ProverStateMachine;

public final class RefTrace {
    public static void main(String[] args) throws Exception {
        // Arguments.
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

        PrintStream out = new PrintStream(new BufferedOutputStream(System.out, 1 << 16), false);
        try {
            // Read the sheet exactly as ggp-base's repositories do (TestGameRepository,
            // RemoteGameRepository): strip ';' comments line by line, wrap it in one list, parse.
            // getRules() prints the parse error and returns null on a sheet it cannot read.
            Game game = Game.createEphemeralGame(
                Game.preprocessRulesheet(FileUtils.readFileAsString(new File(sheet))));
            List<Gdl> rules = game.getRules();
            if (rules == null) {
                System.err.println("ggp-base could not parse " + sheet);
                System.exit(1);
            }

            // The GameServer's state machine, initialised as in GameServer's constructor.
            ProverStateMachine machine = new ProverStateMachine();
            machine.initialize(rules);
            Role[] roles = machine.getRoles();
            Random random = new Random(seed);

            for (int p = 0; p < playouts; p++) {
                out.print("PLAYOUT " + p + "\n");
                MachineState state = machine.getInitialState();
                for (int step = 0; ; step++) {
                    out.print("STEP " + step + "\n");
                    // STATE: the facts without their `true` wrapper, sorted as strings.
                    List<String> facts = new ArrayList<>();
                    for (GdlSentence s : state.getContents()) facts.add(kif(s.get(0)));
                    Collections.sort(facts);
                    out.append("STATE ").append(String.join(" ", facts)).append('\n');

                    // TERMINAL and GOALS (ERR where the prover finds no goal value or several).
                    if (machine.isTerminal(state)) {
                        out.append("TERMINAL\nGOALS");
                        for (Role r : roles) {
                            String g;
                            try { g = Integer.toString(machine.getGoal(state, r)); }
                            catch (GoalDefinitionException e) { g = "ERR"; }
                            out.append(' ').append(g);
                        }
                        out.append('\n');
                        break;
                    }
                    if (step == maxSteps) { out.append("MAXDEPTH\n"); break; }

                    // LEGAL per role, moves sorted; the random joint move is drawn from the sorted
                    // lists (the prover's own order comes from hash sets) so a seed repeats.
                    List<Move> joint = new ArrayList<>();
                    boolean stuck = false;
                    for (Role r : roles) {
                        List<Move> moves;
                        try { moves = new ArrayList<>(machine.getLegalMoves(state, r)); }
                        catch (MoveDefinitionException e) { moves = new ArrayList<>(); }
                        moves.sort((a, b) -> kif(a.getContents()).compareTo(kif(b.getContents())));
                        out.append("LEGAL ").append(kif(r.getName()));
                        if (moves.isEmpty()) { out.append(" <NO-LEGAL-MOVES>"); stuck = true; }
                        for (Move m : moves) out.append(' ').append(kif(m.getContents()));
                        out.append('\n');
                        if (!moves.isEmpty()) joint.add(moves.get(random.nextInt(moves.size())));
                    }
                    if (stuck) break;   // no joint move exists: the playout ends here

                    // DOES, then the next state.
                    out.append("DOES");
                    for (Move m : joint) out.append(' ').append(kif(m.getContents()));
                    out.append('\n');
                    out.flush();                                // a slow game shows its steps
                    state = machine.getNextState(state, joint);
                }
            }
        } catch (Exception | StackOverflowError e) {
            // The prover itself failed (a sheet it cannot play): keep the trace so far.
            out.flush();
            StackTraceElement[] at = e.getStackTrace();
            System.err.println("reftrace: ggp-base failed: " + e + (at.length > 0 ? " at " + at[0] : ""));
            System.exit(1);
        }
        out.flush();
    }

    /** Compact KIF: ggp-base prints `( cell 1 1 b )`; the traces want `(cell 1 1 b)`. */
    static String kif(Gdl g) {
        return g.toString().replace("( ", "(").replace(" )", ")");
    }

    static void usage() {
        System.err.println("usage: reftrace GAME.kif [--playouts N] [--seed S] [--max-steps M]");
        System.exit(2);
    }
}
