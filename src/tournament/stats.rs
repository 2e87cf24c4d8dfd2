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
    /// The player (index into the tournament's players) in each role.
    pub seats: Vec<usize>,
    /// The goal of each role.
    pub goals: Vec<u32>,
    /// The errors of each role over the match.
    pub errors: Vec<Errors>,
}

/// Errors counted from a record: time-outs, connection errors, illegal moves.
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
}

/// The lines of every group of players in `outcomes`, ordered by group then player; the
/// games are pooled, so pass one game's outcomes for its table.
pub fn lines(outcomes: &[&Outcome]) -> Vec<Line> {
    // group (sorted players) -> player -> (goals, scores, errors)
    type Samples = (Vec<f64>, Vec<f64>, Errors);
    let mut groups: BTreeMap<Vec<usize>, BTreeMap<usize, Samples>> = BTreeMap::new();
    for outcome in outcomes {
        let mut group = outcome.seats.clone();
        group.sort_unstable();
        let best = outcome.goals.iter().copied().max().unwrap_or(0);
        let at_best = outcome.goals.iter().filter(|&&g| g == best).count();
        for (role, &player) in outcome.seats.iter().enumerate() {
            let goal = outcome.goals.get(role).copied().unwrap_or(0);
            let score = if goal < best {
                0.0
            } else if at_best == 1 || outcome.goals.len() == 1 {
                1.0
            } else {
                0.5
            };
            let entry = groups
                .entry(group.clone())
                .or_default()
                .entry(player)
                .or_default();
            entry.0.push(f64::from(goal));
            entry.1.push(score);
            if let Some(&e) = outcome.errors.get(role) {
                entry.2.add(e);
            }
        }
    }
    let mut lines = Vec::new();
    for (group, players) in groups {
        for (player, (goals, scores, errors)) in players {
            let count = |s: f64| scores.iter().filter(|&&x| x == s).count();
            let p = scores.iter().sum::<f64>() / scores.len().max(1) as f64;
            let score = (p, wilson(p, scores.len()));
            let elo = (group.len() == 2).then(|| {
                let (lo, hi) = score.1;
                (elo(p), Some((elo(lo), elo(hi))))
            });
            lines.push(Line {
                player,
                opponents: group.iter().copied().filter(|&p| p != player).collect(),
                matches: goals.len(),
                wins: if group.len() == 1 { 0 } else { count(1.0) },
                draws: count(0.5),
                losses: count(0.0),
                goal: mean_interval(&goals),
                score,
                elo,
                errors,
            });
        }
    }
    lines
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

/// The table of `lines` as text, headed `title`; `names` names the players.
pub fn render(title: &str, lines: &[Line], names: &[String]) -> String {
    let name = |p: usize| names.get(p).map_or("?", String::as_str);
    let mut rows: Vec<[String; 11]> = vec![[
        "player".into(),
        "vs".into(),
        "n".into(),
        "W".into(),
        "D".into(),
        "L".into(),
        "goal [95%]".into(),
        "score [95%]".into(),
        "Elo [95%]".into(),
        "TO CE IL".into(),
        String::new(),
    ]];
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
        let score = format!(
            "{:.2} [{:.2}, {:.2}]",
            line.score.0, line.score.1.0, line.score.1.1
        );
        let elo = match line.elo {
            Some((e, Some((lo, hi)))) => format!("{} [{}, {}]", signed(e), signed(lo), signed(hi)),
            Some((e, None)) => signed(e),
            None => "-".into(),
        };
        let vs: Vec<&str> = line.opponents.iter().map(|&p| name(p)).collect();
        rows.push([
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
            score,
            elo,
            format!(
                "{} {} {}",
                line.errors.timeouts, line.errors.connection, line.errors.illegal
            ),
            String::new(),
        ]);
    }
    let widths: Vec<usize> = (0..11)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = format!("{title}\n");
    for row in &rows {
        let mut text = String::new();
        for (c, cell) in row.iter().enumerate().take(10) {
            let pad = widths[c] - cell.chars().count();
            if c < 2 {
                let _ = write!(text, "{cell}{}  ", " ".repeat(pad));
            } else {
                let _ = write!(text, "{}{cell}  ", " ".repeat(pad));
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
            goals: goals.to_vec(),
            errors: vec![Errors::default(); 2],
        }
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
