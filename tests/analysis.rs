//! `xqz analysis` driven through pipes by a client written here, as a game server would: many
//! queries in flight, bad ones among them, and answers checked against the rules and against
//! `xqz uci` searching the same positions with the same net and visits.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use xiangqi::{Game, Position, RuleSet};

mod common;

/// A small net trained for one iteration of `configs/tiny.toml`.
fn tiny_net(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xqz-analysis-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    common::train_one_iteration(&common::config("tiny.toml"), &dir)
}

/// Sends `queries` (one line each) to `xqz analysis --net NET`, closes its input, and returns
/// every line it wrote, parsed, after it exited successfully.
fn analyse(net: &Path, queries: &[String]) -> Vec<Value> {
    let mut input = Vec::new();
    for q in queries {
        writeln!(input, "{q}").unwrap();
    }
    analyse_bytes(net, &[], &input)
}

/// [`analyse`] with more arguments and raw input bytes.
fn analyse_bytes(net: &Path, args: &[&str], input: &[u8]) -> Vec<Value> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_xqz"))
        .args(["analysis", "--net"])
        .arg(net)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // Written on its own thread: the engine answers while it reads.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let lines: Vec<Value> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| {
            let l = l.unwrap();
            serde_json::from_str(&l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))
        })
        .collect();
    writer.join().unwrap();
    assert!(child.wait().unwrap().success());
    lines
}

/// The position after `moves` from the start.
fn after(moves: &[&str]) -> Game {
    let mut g = Game::new(Position::start(), RuleSet::Asian);
    for m in moves {
        let mv = g.position().parse_uci(m).unwrap();
        g.play(mv).unwrap();
    }
    g
}

/// Checks an answer against the rules: legal candidates, legal principal variations, visits
/// and probabilities that add up.
fn check_answer(a: &Value, game: &Game, visits: u64) {
    let infos = a["moveInfos"].as_array().unwrap();
    assert!(!infos.is_empty(), "{a}");
    let mut sum = 0;
    for (k, info) in infos.iter().enumerate() {
        assert_eq!(info["order"].as_u64(), Some(k as u64), "{a}");
        let pv: Vec<&str> =
            info["pv"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
        assert_eq!(Some(pv[0]), info["move"].as_str(), "{a}");
        let mut g = game.clone();
        for m in &pv {
            let mv = g.position().parse_uci(m).unwrap();
            assert!(g.position().legal_moves().contains(&mv), "illegal {m} in {pv:?}");
            if g.play(mv).unwrap().is_some() {
                break;
            }
        }
        let wdl: Vec<f64> =
            info["wdl"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert!((wdl.iter().sum::<f64>() - 1.0).abs() < 1e-4 && wdl.iter().all(|&x| x >= 0.0));
        let q = info["q"].as_f64().unwrap();
        assert!((wdl[0] - wdl[2] - q).abs() < 1e-4, "W - L is q: {info}");
        assert!((info["winrate"].as_f64().unwrap() - (1.0 + q) / 2.0).abs() < 1e-5);
        sum += info["visits"].as_u64().unwrap();
    }
    let root = &a["rootInfo"];
    // The root's own evaluation is one visit beside the searched ones.
    assert_eq!(root["visits"].as_u64(), Some(visits + 1), "{a}");
    assert!(sum <= visits, "{sum} of {visits}");
}

#[test]
fn many_queries_in_flight_good_and_bad_are_each_answered() {
    let net = tiny_net("many");
    let opening = ["h2e2", "h9g7", "h0g2", "i9h9"];
    let mut queries = vec![
        json!({"id": "all-turns", "moves": opening, "analyzeTurns": [0, 2, 4], "maxVisits": 40})
            .to_string(),
        "this is not json".to_string(),
        json!({"id": "illegal", "moves": ["h2e2", "a0a5"]}).to_string(),
        json!({"id": "unknown", "maxVisits": 8, "komi": 7.5}).to_string(),
        json!({"id": "janggi", "game": "janggi"}).to_string(),
        json!({"id": "visits", "maxVisits": 0}).to_string(),
        json!({"id": "past", "moves": ["h2e2"], "analyzeTurns": [3]}).to_string(),
        json!({"moves": []}).to_string(),
        json!({"id": "fen", "initialFen": "4k4/9/9/9/9/9/9/9/9/4K4 x - - 0 1"}).to_string(),
    ];
    for k in 0..12 {
        queries.push(
            json!({"id": format!("p{k}"), "moves": &opening[..k % 5], "maxVisits": 24 + k, "maxMoveInfos": 3})
                .to_string(),
        );
    }
    let lines = analyse(&net, &queries);
    let mut answers: BTreeMap<(String, u64), &Value> = BTreeMap::new();
    let mut errors: BTreeMap<String, &Value> = BTreeMap::new();
    let mut without_id = Vec::new();
    for l in &lines {
        match (l.get("error"), l["id"].as_str()) {
            (Some(_), Some(id)) => {
                errors.insert(id.to_string(), l);
            }
            (Some(_), None) => without_id.push(l),
            (None, Some(id)) => {
                let turn = l["turnNumber"].as_u64().unwrap();
                assert!(answers.insert((id.to_string(), turn), l).is_none(), "answered twice: {l}");
            }
            (None, None) => panic!("a line with neither id nor error: {l}"),
        }
    }
    // Each bad query: one error line, with its id and the field to blame where there is one.
    for (id, field) in [
        ("illegal", Some("moves")),
        ("unknown", Some("komi")),
        ("janggi", Some("game")),
        ("visits", Some("maxVisits")),
        ("past", Some("analyzeTurns")),
        ("fen", Some("initialFen")),
    ] {
        let e = errors.get(id).unwrap_or_else(|| panic!("no error for {id}: {lines:?}"));
        assert_eq!(e["field"].as_str(), field, "{e}");
    }
    // The line that is no JSON, and the query without an id.
    assert_eq!(without_id.len(), 2, "{without_id:?}");
    assert!(without_id[0]["error"].as_str().unwrap().contains("not JSON"), "{without_id:?}");
    assert_eq!(without_id[1]["field"].as_str(), Some("id"), "{without_id:?}");
    assert_eq!(errors.len(), 6, "{errors:?}");
    // Each good query: an answer for every turn asked for, legal and consistent.
    for turn in [0, 2, 4] {
        let a = answers[&("all-turns".to_string(), turn)];
        check_answer(a, &after(&opening[..turn as usize]), 40);
    }
    for k in 0..12usize {
        let turn = (k % 5) as u64;
        let a = answers[&(format!("p{k}"), turn)];
        check_answer(a, &after(&opening[..k % 5]), 24 + k as u64);
        assert!(a["moveInfos"].as_array().unwrap().len() <= 3, "maxMoveInfos: {a}");
    }
    assert_eq!(answers.len(), 3 + 12);
    let _ = std::fs::remove_dir_all(&net);
}

#[test]
fn an_answer_is_what_xqz_uci_finds_with_the_same_net_and_visits() {
    let net = tiny_net("same");
    // Budgets on both sides of `Algorithm auto`'s switch from Gumbel to PUCT.
    let cases: [(&[&str], u64); 4] =
        [(&[], 100), (&["h2e2"], 200), (&["h2e2", "h9g7", "c3c4"], 60), (&["h2e2", "h9g7"], 900)];
    let queries: Vec<String> = cases
        .iter()
        .enumerate()
        .map(|(k, (moves, visits))| {
            json!({"id": k.to_string(), "moves": moves, "maxVisits": visits}).to_string()
        })
        .collect();
    let lines = analyse(&net, &queries);
    assert_eq!(lines.len(), cases.len(), "{lines:?}");
    for (k, (moves, visits)) in cases.iter().enumerate() {
        let a = lines.iter().find(|l| l["id"].as_str() == Some(&k.to_string())).unwrap();
        let script = format!(
            "uci\nposition startpos{}{}\ngo nodes {visits}\n",
            if moves.is_empty() { "" } else { " moves " },
            moves.join(" ")
        );
        let mut uci = Command::new(env!("CARGO_BIN_EXE_xqz"))
            .args(["uci", "--net"])
            .arg(&net)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        uci.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
        let out = uci.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let best = text.lines().find_map(|l| l.strip_prefix("bestmove ")).unwrap();
        let best = best.split_whitespace().next().unwrap();
        let info = text.lines().rev().find(|l| l.starts_with("info depth")).unwrap();
        let nodes: u64 =
            info.split_whitespace().skip_while(|w| *w != "nodes").nth(1).unwrap().parse().unwrap();
        let pv: Vec<&str> = info.split_whitespace().skip_while(|w| *w != "pv").skip(1).collect();
        let first = &a["moveInfos"][0];
        assert_eq!(first["move"].as_str(), Some(best), "{a}\n{text}");
        assert_eq!(a["rootInfo"]["visits"].as_u64(), Some(nodes), "{a}\n{text}");
        let apv: Vec<&str> =
            first["pv"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
        assert_eq!(apv, pv, "{a}\n{text}");
        // The engine's wdl, per mille, is the answer's, rounded.
        let wdl: Vec<i64> = info
            .split_whitespace()
            .skip_while(|w| *w != "wdl")
            .skip(1)
            .take(3)
            .map(|w| w.parse().unwrap())
            .collect();
        let aw = first["wdl"].as_array().unwrap();
        assert!((aw[0].as_f64().unwrap() * 1000.0 - wdl[0] as f64).abs() <= 1.0, "{a}\n{info}");
        assert!((aw[2].as_f64().unwrap() * 1000.0 - wdl[2] as f64).abs() <= 1.0, "{a}\n{info}");
    }
    let _ = std::fs::remove_dir_all(&net);
}

#[test]
fn odd_lines_get_errors_naming_the_field_and_answers_do_not_depend_on_company() {
    let net = tiny_net("odd");
    let mut input = Vec::new();
    input.extend_from_slice(b"{\"id\":\"utf\xff8\",\"maxVisits\":4}\n");
    input.extend_from_slice(&vec![b'x'; 3 << 20]);
    input.extend_from_slice(b"\n");
    for line in [
        json!({"id": "empty-turns", "analyzeTurns": []}),
        json!({"id": "type", "maxVisits": "many"}),
        json!({"id": "list", "moves": [1]}),
        json!({"id": "too-many", "maxVisits": 5000}),
        json!({"id": "float", "maxVisits": 8.0, "moves": ["h2e2"]}),
    ] {
        input.extend_from_slice(format!("{line}\n").as_bytes());
    }
    let lines = analyse_bytes(&net, &["--max-visits", "1000"], &input);
    let by_id = |id: &str| lines.iter().find(|l| l["id"].as_str() == Some(id));
    // Not UTF-8 and too long: an error each, with no id (none can be trusted).
    let anonymous: Vec<&Value> = lines.iter().filter(|l| l.get("id").is_none()).collect();
    assert_eq!(anonymous.len(), 2, "{lines:?}");
    assert!(anonymous[0]["error"].as_str().unwrap().contains("UTF-8"), "{anonymous:?}");
    assert!(anonymous[1]["error"].as_str().unwrap().contains("longer than"), "{anonymous:?}");
    for (id, field) in [
        ("empty-turns", "analyzeTurns"),
        ("type", "maxVisits"),
        ("list", "moves"),
        ("too-many", "maxVisits"),
    ] {
        let e = by_id(id).unwrap_or_else(|| panic!("{id}: {lines:?}"));
        assert_eq!(e["field"].as_str(), Some(field), "{e}");
    }
    // 8.0 is a whole number.
    let a = by_id("float").unwrap();
    assert!(a.get("error").is_none(), "{a}");
    check_answer(a, &after(&["h2e2"]), 8);
    assert_eq!(lines.len(), 2 + 5, "{lines:?}");

    // The same 300 searches, all in flight (4 leaves each a round: 1,200 leaves a batch) or one
    // at a time, give the same answers.
    let opening = ["h2e2", "h9g7", "h0g2", "i9h9", "i0h0", "b9c7"];
    let queries: Vec<String> = (0..300)
        .map(|k| {
            json!({"id": k.to_string(), "moves": &opening[..k % 7], "maxVisits": 12 + k % 5})
                .to_string()
        })
        .collect();
    let mut text = Vec::new();
    for q in &queries {
        writeln!(text, "{q}").unwrap();
    }
    let key = |mut v: Vec<Value>| {
        v.sort_by_key(|a| a["id"].as_str().unwrap().parse::<u32>().unwrap());
        v
    };
    let together = key(analyse_bytes(&net, &["--max-concurrent", "300"], &text));
    let alone = key(analyse_bytes(&net, &["--max-concurrent", "1"], &text));
    assert_eq!(together.len(), 300);
    assert_eq!(together, alone);
    let _ = std::fs::remove_dir_all(&net);
}
