//! The validator against the shared corpus: the verdicts of the test sheets in `EXPECTED.tsv`,
//! and every published game in `base/` accepted as valid.

use std::fs;
use std::path::{Path, PathBuf};

use ggp_gdl::gdl::Severity;
use ggp_gdl::gdl::validate::{Check, Verdict, check_text};

/// The shared game corpus.
const GAMES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/games/");

/// Test sheets that `EXPECTED.tsv` calls invalid for a construct outside GDL's specification
/// that the reference prover (ggp-base) plays: we play them too, with a warning of this kind
/// (issues 13 and 25), so their verdict is the one without that construct.
const PLAYED_AS_THE_REFERENCE_DOES: &[(&str, &str, Check)] = &[
    (
        "test_clean_not_distinct.kif",
        "valid",
        Check::MisplacedKeyword,
    ),
    (
        "test_invalid_function_arities_differ.kif",
        "valid",
        Check::Arity,
    ),
    // Issue 25: two relations to the reference prover.
    (
        "test_invalid_sentence_arities_differ.kif",
        "valid",
        Check::Arity,
    ),
    // Issue 25: the prover drops a `distinct` no positive literal binds, so `distinctCell`
    // holds of any arguments its callers pass (it has none here).
    ("test_case_3b.kif", "valid", Check::Unsafe),
    // Issue 25: `(legal ?p ?p)`, its role bound by the query (the move is the role); in 3f,
    // `(<= (goal ?p 0) (not (on_list ?p)))` loses its negation, as ggp-base's prover drops it.
    ("test_case_3e.kif", "valid", Check::Unsafe),
    ("test_case_3f.kif", "valid", Check::Unsafe),
    // `(foo (not bar))` and nothing else: a fragment.
    (
        "misplacedDatalogKeyword3.kif",
        "fragment",
        Check::MisplacedKeyword,
    ),
];

/// Published sheets in `base/` that are genuinely broken, with the reason; none so far.
const BROKEN_BASE_SHEETS: &[(&str, &str)] = &[];

/// Reads a sheet, failing the test with the path if it cannot be read.
fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The diagnostics of a sheet, one per line, for failure messages.
fn explain(text: &str) -> String {
    check_text(text)
        .1
        .iter()
        .map(|d| format!("    {}", d.to_string().replace('\n', "\n    ")))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn test_sheets_get_their_expected_verdicts() {
    let dir = Path::new(GAMES).join("test");
    let table = read(&dir.join("EXPECTED.tsv"));
    let mut checked = 0;
    let mut mismatches = Vec::new();
    for line in table.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let mut fields = line.split('\t');
        let (Some(file), Some(expected)) = (fields.next(), fields.next()) else {
            panic!("malformed line in EXPECTED.tsv: {line:?}");
        };
        let why = fields.next().unwrap_or("");
        let text = read(&dir.join(file));
        let (verdict, diagnostics) = check_text(&text);
        checked += 1;
        let mut expected = expected;
        if let Some(&(_, ours, check)) = PLAYED_AS_THE_REFERENCE_DOES
            .iter()
            .find(|(f, _, _)| *f == file)
        {
            expected = ours;
            if !diagnostics
                .iter()
                .any(|d| d.severity == Severity::Warning && d.check == check)
            {
                mismatches.push(format!("{file}: no {check:?} warning\n{}", explain(&text)));
            }
        }
        if verdict.name() != expected {
            mismatches.push(format!(
                "{file}: expected {expected} ({why}), got {}\n{}",
                verdict.name(),
                explain(&text)
            ));
        }
    }
    for m in &mismatches {
        eprintln!("{m}");
    }
    assert_eq!(checked, 48, "EXPECTED.tsv should list 48 sheets");
    assert!(
        mismatches.is_empty(),
        "{} of {checked} verdicts differ",
        mismatches.len()
    );
}

#[test]
fn published_games_are_valid() {
    let dir = Path::new(GAMES).join("base");
    let mut sheets: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "kif"))
        .collect();
    sheets.sort();
    let mut mismatches = Vec::new();
    for path in &sheets {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let text = read(path);
        let (verdict, _) = check_text(&text);
        let broken = BROKEN_BASE_SHEETS.iter().any(|(n, _)| *n == name);
        if (verdict == Verdict::Valid) == broken {
            mismatches.push(format!(
                "{name}: got {}\n{}",
                verdict.name(),
                explain(&text)
            ));
        }
    }
    for m in &mismatches {
        eprintln!("{m}");
    }
    assert_eq!(sheets.len(), 314, "base/ should hold 314 sheets");
    assert!(
        mismatches.is_empty(),
        "{} of {} sheets misjudged",
        mismatches.len(),
        sheets.len()
    );
}
