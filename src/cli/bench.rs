//! `ggp bench`: random playouts per second, measured the way gdl-perf does (the command and
//! the measurement).
//!
//! Each playout starts at the initial state and, until a terminal state, asks for every role's
//! legal moves, picks a uniformly random joint move and computes the next state; the goals
//! are read at the end. Building the engine is not timed.
//!
//! [`Mode::Batched`] asks the engine for playouts [`Limit::batch`] at a time
//! ([`StateMachine::random_playouts`], which the propnet plays 64 or 256 games per pass);
//! [`Mode::OneByOne`] plays them one after the other ([`StateMachine::playout`]), the
//! reference the batch is compared with.

use std::fmt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use ggp_engine::engine::{self, Engine, EngineChoice, UseMachineMut};
use ggp_engine::machine::{MachineError, StateMachine};
use ggp_engine::propnet::Budget;
use ggp_engine::resources::{peak_memory, thread_cpu_time};

/// Measure random playouts per second.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// The rule sheet (.kif).
    pub game: PathBuf,
    /// How long to measure.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Stop after this many playouts (per thread), or at `--seconds`, whichever comes
    /// first: a fixed amount of work for instruction-count profiles.
    #[arg(long)]
    pub playouts: Option<u64>,
    /// Playouts asked for at once (the propnet plays 16 or more 64 games per pass, 1024 or
    /// more 256 games per pass).
    #[arg(long, default_value_t = BATCH)]
    pub batch: u64,
    /// Cut a playout after this many moves (a game with no reachable end still returns).
    #[arg(long, default_value_t = 1000)]
    pub max_steps: usize,
    /// Seed of the random number generator.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Time each rule and print the slowest with their join plans (Datalog engine).
    #[arg(long)]
    pub profile: bool,
    /// The engine.
    #[arg(long, value_enum, default_value_t = EngineChoice::Auto)]
    pub engine: EngineChoice,
    /// Threads running playouts, each with its own copy of the engine's state.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Grounding time budget in seconds (default: the engine's); raise it to run under
    /// valgrind.
    #[arg(long)]
    pub ground_seconds: Option<f64>,
    /// Skip the propnet's reference run (one game at a time) and its ratio.
    #[arg(long)]
    pub no_reference: bool,
}

/// `ggp bench`: random playouts per second (and, on the propnet, one game at a time).
pub fn command(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let BenchArgs {
        game,
        seconds,
        playouts,
        batch,
        max_steps,
        seed,
        profile,
        engine,
        threads,
        ground_seconds,
        no_reference,
    } = args;
    let mut budget = Budget::default();
    if let Some(s) = ground_seconds {
        budget.max_seconds = s;
    }
    let mut loaded = super::load_engine_within(&game, engine, &budget)?;
    println!("engine: {}", loaded.engine.name());
    if profile && let Engine::Datalog(m) = &mut loaded.engine {
        m.evaluator_mut().enable_profile();
    }
    let limit = Limit {
        seconds,
        playouts,
        batch: batch.max(1),
        max_steps,
    };
    struct Bench {
        limit: Limit,
        seed: u64,
        threads: usize,
        mode: Mode,
    }
    impl UseMachineMut for Bench {
        type Output = anyhow::Result<Report>;
        fn with<M: engine::Machine>(self, m: &mut M) -> Self::Output {
            on_threads(m, self.limit, self.seed, self.threads, self.mode)
        }
    }
    let report = loaded.engine.run_mut(Bench {
        limit,
        seed,
        threads,
        mode: Mode::Batched,
    })?;
    println!("{report}");
    if let Engine::Propnet(m) = &mut loaded.engine
        && !no_reference
    {
        let one = on_threads(m, limit, seed, threads, Mode::OneByOne)?;
        let rate = |r: &Report| r.playouts as f64 / r.elapsed.as_secs_f64();
        println!(
            "one game at a time (differential propagation): {:.1} playouts/s",
            rate(&one)
        );
        println!(
            "ratio to one game at a time: {:.2}x",
            rate(&report) / rate(&one)
        );
    }
    if let Engine::Datalog(m) = &mut loaded.engine {
        for (time, plan) in m.evaluator_mut().profile_report(10) {
            println!("{:>10.3} s  {plan}", time.as_secs_f64());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs the benchmark on `threads` threads, each on its own clone of `machine`, and adds up
/// the counts.
fn on_threads<M>(
    machine: &mut M,
    limit: Limit,
    seed: u64,
    threads: usize,
    mode: Mode,
) -> anyhow::Result<Report>
where
    M: StateMachine + Clone + Send,
{
    if threads <= 1 {
        return Ok(run(machine, limit, seed, mode)?);
    }
    let reports: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let mut copy = machine.clone();
                let seed = seed.wrapping_add(t as u64);
                scope.spawn(move || run(&mut copy, limit, seed, mode))
            })
            .collect();
        handles.into_iter().map(|h| h.join()).collect()
    });
    let mut total = Report {
        playouts: 0,
        states: 0,
        cut: 0,
        elapsed: std::time::Duration::ZERO,
        cpu: Some(std::time::Duration::ZERO),
        peak_memory: None,
        percepts: None,
    };
    for report in reports {
        let report = report.map_err(|_| anyhow::anyhow!("a benchmark thread panicked"))??;
        total.playouts += report.playouts;
        total.states += report.states;
        total.cut += report.cut;
        total.elapsed = total.elapsed.max(report.elapsed);
        total.cpu = total.cpu.zip(report.cpu).map(|(a, b)| a + b);
        // Every thread measures percepts alike: the first one's figure stands.
        total.percepts = total.percepts.or(report.percepts);
    }
    total.peak_memory = peak_memory();
    Ok(total)
}

/// What a benchmark measured.
pub struct Report {
    /// Completed playouts.
    pub playouts: u64,
    /// State changes (moves made) in those playouts.
    pub states: u64,
    /// Playouts cut at the step cap before reaching a terminal state.
    pub cut: u64,
    /// Time spent.
    pub elapsed: Duration,
    /// Processor time the measuring threads got, if known (less than the elapsed time times
    /// the threads when the machine is busy).
    pub cpu: Option<Duration>,
    /// Peak resident memory of the process, in bytes, if known.
    pub peak_memory: Option<u64>,
    /// GDL-II: measured apart, after the playouts: states whose percepts were read for every
    /// role, the percepts found, and the time it took.
    pub percepts: Option<(u64, u64, Duration)>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.elapsed.as_secs_f64();
        writeln!(
            f,
            "playouts: {} in {secs:.2} s ({} states)",
            self.playouts, self.states
        )?;
        writeln!(f, "playouts/s: {:.1}", self.playouts as f64 / secs)?;
        write!(f, "states/s: {:.0}", self.states as f64 / secs)?;
        if self.cut > 0 {
            write!(
                f,
                "\ncut at the step cap: {} of {} playouts",
                self.cut, self.playouts
            )?;
        }
        if let Some(cpu) = self.cpu.filter(|c| !c.is_zero()) {
            write!(
                f,
                "\ncpu time: {:.2} s ({:.1} playouts per cpu second)",
                cpu.as_secs_f64(),
                self.playouts as f64 / cpu.as_secs_f64()
            )?;
        }
        if let Some(bytes) = self.peak_memory {
            write!(f, "\npeak memory: {:.1} MB", bytes as f64 / 1e6)?;
        }
        if let Some((steps, seen, time)) = self.percepts {
            write!(
                f,
                "\npercepts (apart): {steps} steps with every role's percepts in {:.2} s \
                 ({:.0} steps/s, {:.2} percepts per step)",
                time.as_secs_f64(),
                steps as f64 / time.as_secs_f64().max(1e-9),
                seen as f64 / steps.max(1) as f64
            )?;
        }
        Ok(())
    }
}

/// When a benchmark stops.
#[derive(Clone, Copy, Debug)]
pub struct Limit {
    /// Stop after about this many seconds.
    pub seconds: f64,
    /// Stop after this many playouts, if set (a fixed amount of work, for instruction-count
    /// profiles that compare builds).
    pub playouts: Option<u64>,
    /// Playouts asked for at once in [`Mode::Batched`].
    pub batch: u64,
    /// Cut each playout after this many moves (a game without a reachable terminal state
    /// must still end the benchmark).
    pub max_steps: usize,
}

/// How playouts are asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// [`Limit::batch`] at a time, through [`StateMachine::random_playouts`].
    Batched,
    /// One at a time, through [`StateMachine::playout`] and the goals of its last state.
    OneByOne,
}

/// Playouts asked for at once in [`Mode::Batched`] by default.
pub const BATCH: u64 = 1024;

/// Runs playouts until `limit` (at least one playout).
///
/// # Errors
/// The engine failed.
pub fn run<M: StateMachine>(
    machine: &mut M,
    limit: Limit,
    seed: u64,
    mode: Mode,
) -> Result<Report, MachineError> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let initial = machine.initial_state();
    let budget = Duration::from_secs_f64(limit.seconds.max(0.0));
    let cpu_start = thread_cpu_time();
    let start = Instant::now();
    let (mut playouts, mut states, mut cut) = (0u64, 0u64, 0u64);
    let mut goal_sum = 0u64;
    loop {
        match mode {
            Mode::OneByOne => {
                let (last, steps) = machine.playout(&initial, &mut rng, limit.max_steps)?;
                let terminal = steps < limit.max_steps || machine.is_terminal(&last)?;
                cut += u64::from(!terminal);
                for r in (0..machine.roles().len()).filter(|_| terminal) {
                    goal_sum +=
                        u64::from(machine.goal_values(&last, r)?.last().copied().unwrap_or(0));
                }
                playouts += 1;
                states += steps as u64;
            }
            Mode::Batched => {
                // A batch does not say which playouts reached the cap; the count of cut
                // playouts comes from the one-by-one mode.
                let count = limit
                    .playouts
                    .map_or(limit.batch, |n| limit.batch.min(n - playouts));
                let batch = machine.random_playouts(&initial, &mut rng, count, limit.max_steps)?;
                goal_sum += batch.goal_sums.iter().sum::<u64>();
                playouts += batch.playouts;
                states += batch.steps;
            }
        }
        if start.elapsed() >= budget || limit.playouts.is_some_and(|n| playouts >= n) {
            break;
        }
    }
    std::hint::black_box(goal_sum);
    let cpu = match (cpu_start, thread_cpu_time()) {
        (Some(a), Some(b)) => b.checked_sub(a),
        _ => None,
    };
    let elapsed = start.elapsed();
    let percepts = if machine.has_percepts() {
        Some(percept_rate(
            machine,
            &initial,
            &mut rng,
            limit,
            elapsed / 4,
        )?)
    } else {
        None
    };
    Ok(Report {
        playouts,
        states,
        cut,
        elapsed,
        cpu,
        peak_memory: peak_memory(),
        percepts,
    })
}

/// Random playouts reading every role's percepts at each step, for about `budget` (at least
/// one playout, or `limit.playouts` of them when set): the steps, the percepts and the time.
///
/// # Errors
/// The engine failed.
fn percept_rate<M: StateMachine>(
    machine: &mut M,
    initial: &M::State,
    rng: &mut Xoshiro256PlusPlus,
    limit: Limit,
    budget: Duration,
) -> Result<(u64, u64, Duration), MachineError> {
    let start = Instant::now();
    let (mut steps, mut seen, mut playouts) = (0u64, 0u64, 0u64);
    let (mut joint, mut scratch, mut out) = (Vec::new(), Vec::new(), Vec::new());
    loop {
        let mut state = initial.clone();
        for _ in 0..limit.max_steps {
            if machine.is_terminal(&state)? {
                break;
            }
            machine.random_joint_move_into(&state, rng, &mut joint, &mut scratch)?;
            for role in 0..machine.roles().len() {
                machine.percepts_into(&state, &joint, role, &mut out)?;
                seen += out.len() as u64;
            }
            state = machine.next_state_unchecked(&state, &joint)?;
            steps += 1;
        }
        playouts += 1;
        if limit
            .playouts
            .map_or(start.elapsed() >= budget, |n| playouts >= n)
        {
            break;
        }
    }
    Ok((steps, seen, start.elapsed()))
}
