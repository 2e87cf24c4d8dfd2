//! Results tables: wins, draws, losses, mean goal with its 95% confidence interval, an Elo
//! difference with its interval, and errors, per game and over all games.
//!
//! Each match gives each player a result against the others: a win when its goal is higher
//! than every other player's, a draw when it shares the highest, a loss otherwise; its score is
//! 1, ½ or 0. The 95% interval of the mean goal is mean ± t·s/√n, with s the sample standard
//! deviation over the matches and t Student's 97.5% quantile for n − 1 degrees of freedom
//! (1.96 for large n). The 95% interval of the score p is Wilson's score interval (a draw
//! counting as half a win), which stays honest at small n and at p = 0 or 1, where the normal
//! interval shrinks to nothing. The Elo difference of a two-player pairing is
//! −400·log₁₀(1/p − 1) (the logistic model, as cutechess-cli and BayesElo's defaults), and its
//! interval the same transform of the score interval's ends; a score of 0 or 1 has an
//! unbounded Elo, shown as `-inf` or `+inf`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What one finished match gives the tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The game's name.
    pub game: String,
    /// The player (index into the tournament's players) in each seat counted (the filler's
    /// seats are left out).
    pub seats: Vec<usize>,
    /// The role (index into the game's player roles) of each seat counted.
    pub roles: Vec<usize>,
    /// The goal of each seat counted.
    pub goals: Vec<u32>,
    /// The errors of each seat counted over the match.
    pub errors: Vec<Errors>,
    /// The sum of every role's goal, the filler's included: matches of one game with
    /// different sums show that its goals do not sum to a constant.
    pub total: u32,
}

impl Outcome {
    /// Whether the players other than the one in `seat` made no error in this match: the
    /// matches that count for `seat`'s clean figure.
    pub fn clean_for(&self, seat: usize) -> bool {
        self.errors
            .iter()
            .enumerate()
            .all(|(other, e)| other == seat || e.is_none())
    }
}

/// Errors counted from a record: time-outs, connection errors, illegal moves (a START not
/// answered in time, or not answered `ready`, counts as one of these, at step 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Errors {
    /// `TO`: a reply later than the clock.
    pub timeouts: usize,
    /// `CE`: the connection failed.
    pub connection: usize,
    /// `IL`: a reply that was not a legal move.
    pub illegal: usize,
}

impl Errors {
    /// Counts the error strings of one role in a record (`TO`, `CE`, `IL ...`; `""` is none).
    pub fn count<'a>(codes: impl IntoIterator<Item = &'a str>) -> Errors {
        let mut errors = Errors::default();
        for code in codes {
            if code.starts_with("TO") {
                errors.timeouts += 1;
            } else if code.starts_with("CE") {
                errors.connection += 1;
            } else if code.starts_with("IL") {
                errors.illegal += 1;
            }
        }
        errors
    }

    /// Whether there are none.
    pub fn is_none(&self) -> bool {
        *self == Errors::default()
    }

    fn add(&mut self, other: Errors) {
        self.timeouts += other.timeouts;
        self.connection += other.connection;
        self.illegal += other.illegal;
    }
}

/// One player's line in a table: its results against the others of its group.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// The player.
    pub player: usize,
    /// The other players of the group.
    pub opponents: Vec<usize>,
    /// Matches.
    pub matches: usize,
    /// Wins, draws and losses.
    pub wins: usize,
    /// Draws.
    pub draws: usize,
    /// Losses.
    pub losses: usize,
    /// Mean goal and the half-width of its 95% interval (`None` below 2 matches); the tables
    /// show the interval within 0 to 100.
    pub goal: (f64, Option<f64>),
    /// Mean score (win 1, draw ½) and its 95% (Wilson) interval.
    pub score: (f64, (f64, f64)),
    /// Elo difference to the opponent and its 95% interval (two-player groups only).
    pub elo: Option<(f64, Option<(f64, f64)>)>,
    /// Errors over the matches.
    pub errors: Errors,
    /// The same results over the matches in which no opponent made an error.
    pub clean: Clean,
}

/// A player's results over its clean matches: those in which every other player finished
/// without an error (no time-out, no illegal or unreadable reply, no lost connection, START
/// answered `ready` in time). A match the referee finished with random moves for a broken
/// opponent says nothing of how well the player plays; these figures leave such matches out.
#[derive(Debug, Clone, PartialEq)]
pub struct Clean {
    /// Clean matches.
    pub matches: usize,
    /// Wins among them.
    pub wins: usize,
    /// Draws.
    pub draws: usize,
    /// Losses.
    pub losses: usize,
    /// Mean score and its 95% (Wilson) interval.
    pub score: (f64, (f64, f64)),
    /// The player's mean goal and its opponents' mean goal over the same matches, so the
    /// same seats: where the goals do not sum to a constant, a win says little and these
    /// say more.
    pub goals: (f64, f64),
}

/// What one match gives one player's line.
struct Sample {
    goal: f64,
    score: f64,
    errors: Errors,
    clean: bool,
    /// The mean goal of the other players of the match.
    opponents_goal: f64,
}

/// The lines of every group of players in `outcomes`, ordered by group then player; the
/// games are pooled, so pass one game's outcomes for its table.
pub fn lines(outcomes: &[&Outcome]) -> Vec<Line> {
    // group (sorted players) -> player -> its samples
    let mut groups: BTreeMap<Vec<usize>, BTreeMap<usize, Vec<Sample>>> = BTreeMap::new();
    for outcome in outcomes {
        let mut group = outcome.seats.clone();
        group.sort_unstable();
        let best = outcome.goals.iter().copied().max().unwrap_or(0);
        let at_best = outcome.goals.iter().filter(|&&g| g == best).count();
        let sum: u32 = outcome.goals.iter().sum();
        let others = outcome.goals.len().saturating_sub(1).max(1) as f64;
        for (seat, &player) in outcome.seats.iter().enumerate() {
            let goal = outcome.goals.get(seat).copied().unwrap_or(0);
            let score = if goal < best {
                0.0
            } else if at_best == 1 || outcome.goals.len() == 1 {
                1.0
            } else {
                0.5
            };
            groups
                .entry(group.clone())
                .or_default()
                .entry(player)
                .or_default()
                .push(Sample {
                    goal: f64::from(goal),
                    score,
                    errors: outcome.errors.get(seat).copied().unwrap_or_default(),
                    clean: outcome.clean_for(seat),
                    opponents_goal: f64::from(sum - goal) / others,
                });
        }
    }
    let mut lines = Vec::new();
    for (group, players) in groups {
        for (player, samples) in players {
            let goals: Vec<f64> = samples.iter().map(|s| s.goal).collect();
            let (wins, draws, losses) = results(samples.iter(), group.len());
            let score = score_of(samples.iter());
            let elo = (group.len() == 2).then(|| {
                let (lo, hi) = score.1;
                (elo(score.0), Some((elo(lo), elo(hi))))
            });
            let mut errors = Errors::default();
            for sample in &samples {
                errors.add(sample.errors);
            }
            let clean: Vec<&Sample> = samples.iter().filter(|s| s.clean).collect();
            let (clean_wins, clean_draws, clean_losses) =
                results(clean.iter().copied(), group.len());
            let mean = |f: fn(&Sample) -> f64| {
                clean.iter().map(|&s| f(s)).sum::<f64>() / clean.len().max(1) as f64
            };
            lines.push(Line {
                player,
                opponents: group.iter().copied().filter(|&p| p != player).collect(),
                matches: samples.len(),
                wins,
                draws,
                losses,
                goal: mean_interval(&goals),
                score,
                elo,
                errors,
                clean: Clean {
                    matches: clean.len(),
                    wins: clean_wins,
                    draws: clean_draws,
                    losses: clean_losses,
                    score: score_of(clean.iter().copied()),
                    goals: (mean(|s| s.goal), mean(|s| s.opponents_goal)),
                },
            });
        }
    }
    lines
}

/// Wins, draws and losses of `samples` in a group of `group` players (alone, nothing is won).
fn results<'a>(samples: impl Iterator<Item = &'a Sample>, group: usize) -> (usize, usize, usize) {
    let (mut wins, mut draws, mut losses) = (0, 0, 0);
    for sample in samples {
        if sample.score == 0.0 {
            losses += 1;
        } else if sample.score == 0.5 {
            draws += 1;
        } else if group > 1 {
            wins += 1;
        }
    }
    (wins, draws, losses)
}

/// The mean score of `samples` and its 95% (Wilson) interval.
fn score_of<'a>(samples: impl Iterator<Item = &'a Sample>) -> (f64, (f64, f64)) {
    let scores: Vec<f64> = samples.map(|s| s.score).collect();
    let p = scores.iter().sum::<f64>() / scores.len().max(1) as f64;
    (p, wilson(p, scores.len()))
}

/// The mean and the half-width of its 95% interval (none below 2 samples).
fn mean_interval(samples: &[f64]) -> (f64, Option<f64>) {
    let n = samples.len();
    if n == 0 {
        return (0.0, None);
    }
    let mean = samples.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, None);
    }
    let variance = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    (
        mean,
        Some(student_t975(n - 1) * (variance / n as f64).sqrt()),
    )
}

/// Wilson's 95% interval for a proportion `p` observed over `n` trials.
fn wilson(p: f64, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z2 = 1.96_f64 * 1.96;
    let n = n as f64;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = 1.96 / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// Student's t 97.5% quantile for `df` degrees of freedom.
fn student_t975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df - 1],
        31..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

/// The Elo difference that predicts score `p` (clamped to 0..1; 0 and 1 are infinite).
pub fn elo(p: f64) -> f64 {
    let p = p.clamp(0.0, 1.0);
    if p <= 0.0 {
        f64::NEG_INFINITY
    } else if p >= 1.0 {
        f64::INFINITY
    } else {
        -400.0 * (1.0 / p - 1.0).log10()
    }
}

fn signed(x: f64) -> String {
    if x.is_infinite() {
        if x > 0.0 { "+inf" } else { "-inf" }.to_string()
    } else if x.round() == 0.0 {
        "0".to_string()
    } else {
        format!("{x:+.0}")
    }
}

/// The table of `lines` as text, headed `title`; `names` names the players. Each line
/// gives the player's results over all its matches, then over its clean matches (`clean`:
/// their number, `W-D-L`, the score, and its mean goal beside its opponents').
pub fn render(title: &str, lines: &[Line], names: &[String]) -> String {
    let name = |p: usize| names.get(p).map_or("?", String::as_str);
    let header = [
        "player",
        "vs",
        "n",
        "W",
        "D",
        "L",
        "goal [95%]",
        "score [95%]",
        "Elo [95%]",
        "TO CE IL",
        "clean",
        "W-D-L",
        "clean score [95%]",
        "goal:opp",
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    for line in lines {
        // Goals are 0 to 100: the interval is shown within that range.
        let goal = match line.goal.1 {
            Some(h) => format!(
                "{:.1} [{:.0}, {:.0}]",
                line.goal.0,
                (line.goal.0 - h).max(0.0),
                (line.goal.0 + h).min(100.0)
            ),
            None => format!("{:.1}", line.goal.0),
        };
        let score = |(p, (lo, hi)): (f64, (f64, f64))| format!("{p:.2} [{lo:.2}, {hi:.2}]");
        let elo = match line.elo {
            Some((e, Some((lo, hi)))) => format!("{} [{}, {}]", signed(e), signed(lo), signed(hi)),
            Some((e, None)) => signed(e),
            None => "-".into(),
        };
        let vs: Vec<&str> = line.opponents.iter().map(|&p| name(p)).collect();
        let clean = &line.clean;
        let (clean_score, clean_goals) = if clean.matches == 0 {
            ("-".to_string(), "-".to_string())
        } else {
            (
                score(clean.score),
                format!("{:.1}:{:.1}", clean.goals.0, clean.goals.1),
            )
        };
        rows.push(vec![
            name(line.player).to_string(),
            if vs.is_empty() {
                "-".into()
            } else {
                vs.join(",")
            },
            line.matches.to_string(),
            line.wins.to_string(),
            line.draws.to_string(),
            line.losses.to_string(),
            goal,
            score(line.score),
            elo,
            format!(
                "{} {} {}",
                line.errors.timeouts, line.errors.connection, line.errors.illegal
            ),
            clean.matches.to_string(),
            format!("{}-{}-{}", clean.wins, clean.draws, clean.losses),
            clean_score,
            clean_goals,
        ]);
    }
    let mut out = format!("{title}\n");
    out.push_str(&columns(&rows, 2));
    out
}

/// The mean goal of each player in each role over the matches clean for it, one line a role:
/// where the goals do not sum to a constant, this compares the players seat by seat. `roles`
/// names the game's player roles.
pub fn render_roles(outcomes: &[&Outcome], roles: &[String], names: &[String]) -> String {
    // role -> player -> goals
    let mut by_role: BTreeMap<usize, BTreeMap<usize, Vec<f64>>> = BTreeMap::new();
    for outcome in outcomes {
        for (seat, (&player, &role)) in outcome.seats.iter().zip(&outcome.roles).enumerate() {
            if outcome.clean_for(seat) {
                let goal = outcome.goals.get(seat).copied().unwrap_or(0);
                by_role
                    .entry(role)
                    .or_default()
                    .entry(player)
                    .or_default()
                    .push(f64::from(goal));
            }
        }
    }
    let mut rows = vec![vec![
        "role".to_string(),
        "player".to_string(),
        "clean".to_string(),
        "goal".to_string(),
    ]];
    for (role, players) in by_role {
        for (player, goals) in players {
            rows.push(vec![
                roles
                    .get(role)
                    .cloned()
                    .unwrap_or_else(|| format!("role {role}")),
                names.get(player).cloned().unwrap_or_else(|| "?".into()),
                goals.len().to_string(),
                format!("{:.1}", goals.iter().sum::<f64>() / goals.len() as f64),
            ]);
        }
    }
    let mut out =
        "mean goal by role, matches clean for the player (the goals do not sum to a constant)\n"
            .to_string();
    out.push_str(&columns(&rows, 2));
    out
}

/// `rows` as aligned columns, two spaces apart: the first `left` columns flush left, the
/// others flush right.
fn columns(rows: &[Vec<String>], left: usize) -> String {
    let width = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..width)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |cell| cell.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut text = String::new();
        for (c, cell) in row.iter().enumerate() {
            let pad = " ".repeat(widths[c] - cell.chars().count());
            if c < left {
                let _ = write!(text, "{cell}{pad}  ");
            } else {
                let _ = write!(text, "{pad}{cell}  ");
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(seats: [usize; 2], goals: [u32; 2]) -> Outcome {
        Outcome {
            game: "g".into(),
            seats: seats.to_vec(),
            roles: vec![0, 1],
            goals: goals.to_vec(),
            errors: vec![Errors::default(); 2],
            total: goals.iter().sum(),
        }
    }

    /// `outcome`, with `timeouts` time-outs for the player in `seat`.
    fn timed_out(seats: [usize; 2], goals: [u32; 2], seat: usize, timeouts: usize) -> Outcome {
        let mut outcome = outcome(seats, goals);
        outcome.errors[seat].timeouts = timeouts;
        outcome
    }

    /// The clean figure of a player leaves out the matches in which its opponent erred, and
    /// only those; its own errors do not clean a match away.
    #[test]
    fn clean_figures_leave_out_the_matches_an_opponent_spoilt() {
        let outcomes = [
            // Player 1 times out and loses twice: won by 0, but not cleanly.
            timed_out([0, 1], [100, 0], 1, 3),
            timed_out([1, 0], [0, 100], 0, 1),
            // Clean: a loss and a draw for 0, with goals that do not sum to 100.
            outcome([0, 1], [50, 90]),
            outcome([1, 0], [60, 60]),
            // Player 0 errs and loses: clean for 1 (its opponent erred), not for 0.
            timed_out([0, 1], [0, 100], 0, 2),
        ];
        let refs: Vec<&Outcome> = outcomes.iter().collect();
        let lines = lines(&refs);
        let (a, b) = (&lines[0], &lines[1]);
        assert_eq!((a.matches, a.wins, a.draws, a.losses), (5, 2, 1, 2));
        assert_eq!(a.errors.timeouts, 2);
        assert_eq!(b.errors.timeouts, 4);
        let ac = &a.clean;
        assert_eq!((ac.matches, ac.wins, ac.draws, ac.losses), (3, 0, 1, 2));
        assert!((ac.score.0 - 0.5 / 3.0).abs() < 1e-9);
        // Its goals 50, 60, 0 against 90, 60, 100 in the same matches.
        assert!((ac.goals.0 - 110.0 / 3.0).abs() < 1e-9);
        assert!((ac.goals.1 - 250.0 / 3.0).abs() < 1e-9);
        // Player 1's own time-outs leave its two lost matches in its clean figure; only the
        // last, where player 0 erred, is out.
        let bc = &b.clean;
        assert_eq!((bc.matches, bc.wins, bc.draws, bc.losses), (4, 1, 1, 2));
        let text = render("t", &lines, &["a".into(), "b".into()]);
        assert!(
            text.lines()
                .nth(2)
                .unwrap()
                .contains("  3  0-1-2  0.17 [0.02, 0.69]  36.7:83.3"),
            "{text}"
        );
        // By role: player 0 as role 0 in the clean matches 3 and 5 (50, 0), as role 1 in 4 (60).
        let roles = render_roles(
            &refs,
            &["white".into(), "black".into()],
            &["a".into(), "b".into()],
        );
        let rows: Vec<String> = roles
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        for row in [
            "white a 2 25.0",
            "black a 1 60.0",
            "white b 2 30.0",
            "black b 2 45.0",
        ] {
            assert!(rows.iter().any(|r| r == row), "{row}: {roles}");
        }
        // Without a clean match the columns say so.
        let spoilt = [timed_out([0, 1], [100, 0], 1, 1)];
        let refs: Vec<&Outcome> = spoilt.iter().collect();
        let text = render("t", &super::lines(&refs), &["a".into(), "b".into()]);
        let row: Vec<&str> = text.lines().nth(2).unwrap().split_whitespace().collect();
        assert_eq!(row[row.len() - 4..], ["0", "0-0-0", "-", "-"], "{text}");
    }

    #[test]
    fn counts_results_from_each_players_side() {
        let outcomes = [
            outcome([0, 1], [100, 0]),
            outcome([1, 0], [0, 100]),
            outcome([0, 1], [50, 50]),
            outcome([1, 0], [100, 0]),
        ];
        let refs: Vec<&Outcome> = outcomes.iter().collect();
        let lines = lines(&refs);
        assert_eq!(lines.len(), 2);
        let (a, b) = (&lines[0], &lines[1]);
        assert_eq!((a.player, a.wins, a.draws, a.losses), (0, 2, 1, 1));
        assert_eq!((b.player, b.wins, b.draws, b.losses), (1, 1, 1, 2));
        assert_eq!(a.matches, 4);
        assert!((a.goal.0 - 62.5).abs() < 1e-9);
        assert!((a.score.0 + b.score.0 - 1.0).abs() < 1e-9);
        let (ea, _) = a.elo.unwrap();
        let (eb, _) = b.elo.unwrap();
        assert!((ea + eb).abs() < 1e-9 && ea > 0.0);
    }

    #[test]
    fn intervals_follow_students_t() {
        // Scores 1, 0: mean ½, s = √½, half-width 12.706·√½/√2 = 6.353.
        let (mean, half) = mean_interval(&[1.0, 0.0]);
        assert!((mean - 0.5).abs() < 1e-12);
        assert!((half.unwrap() - 6.353).abs() < 1e-9);
        assert_eq!(mean_interval(&[1.0]), (1.0, None));
        // Wilson: 4 wins in 4 still leaves room below (4/(4+1.96²) = 0.510).
        let (lo, hi) = wilson(1.0, 4);
        assert!((lo - 0.5101).abs() < 1e-3 && hi == 1.0);
        let (lo, hi) = wilson(0.5, 100);
        assert!((lo - 0.4038).abs() < 1e-3 && (hi - 0.5962).abs() < 1e-3);
        assert!((elo(0.75) - 190.848).abs() < 1e-3);
        assert_eq!(elo(1.0), f64::INFINITY);
        assert_eq!(elo(-0.2), f64::NEG_INFINITY);
    }

    #[test]
    fn counts_error_codes() {
        let e = Errors::count(["", "TO", "CE", "IL ( mark 9 9 )", "IL null", ""]);
        assert_eq!(
            e,
            Errors {
                timeouts: 1,
                connection: 1,
                illegal: 2
            }
        );
    }

    #[test]
    fn renders_a_line_per_player() {
        let outcomes = [outcome([0, 1], [100, 0]), outcome([1, 0], [0, 100])];
        let refs: Vec<&Outcome> = outcomes.iter().collect();
        let text = render("t", &lines(&refs), &["a".into(), "b".into()]);
        assert_eq!(text.lines().count(), 4, "{text}");
        assert!(text.lines().nth(2).unwrap().starts_with("a "), "{text}");
        assert!(text.contains("+inf [-113, +inf]"), "{text}");
        assert_eq!(signed(-0.2), "0");
        assert_eq!(signed(-12.6), "-13");
    }
}
