//! The semantic calls of the curator's agent (`curate --agent`): which items say the same thing,
//! which decision replaces which, which knowledge is general (and in what words it graduates)
//! and which is this project's only. The deterministic pass makes these calls from words alone;
//! the agent may make them from meaning. Its answer gives them in a fenced block whose info
//! string is `judgments`, one per line:
//!
//! ```text
//! same c:<id> c:<id>          the two items say the same thing: one item
//! apart c:<id> c:<id>         the two entries of one item say different things: two items
//! supersedes c:<new> c:<old>  decision <new> replaces decision <old>
//! stands c:<id>               decision <id> is still in force: nothing replaced it
//! general c:<id>: <wording>   general knowledge; it graduates (if a rule says so) in <wording>
//! local c:<id>                this project's only: it never graduates
//! ```
//!
//! [`check`] refuses the whole answer unless every call names items it may (an item of the pass;
//! lessons for `same`, `apart`, `general`, `local`; a newer and an older decision for
//! `supersedes`, a decision for `stands`) and every general wording is hygienic (nothing of one
//! mission). Calls kept are remembered in curator.json and applied by every later pass: items
//! are merged whole (nothing of either is lost), a superseded decision goes to MEMORY.md's
//! History, and graduation still needs its rule's evidence.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::document::marker_ids;
use super::items::{self, Evidence, Item, Kind};
use super::report::ItemReport;
use super::similarity::{analyse, similarity, words, Context};
use super::SUMMARY_TEXT_CHARS;

/// The agent's calls that were checked and kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Judgments {
    /// Items that say the same thing, by the id of an entry of each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub same: Vec<[String; 2]>,
    /// Entries of one item that say different things: each goes with the entries nearer it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub apart: Vec<[String; 2]>,
    /// Decisions replaced: `[newer, older]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<[String; 2]>,
    /// Decisions still in force, whatever the rules found to replace them.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub stands: BTreeSet<String>,
    /// General knowledge and the wording it graduates in: item id → wording.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub general: BTreeMap<String, String>,
    /// Knowledge of this project only.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub local: BTreeSet<String>,
}

impl Judgments {
    /// Whether there is no call.
    pub fn is_empty(&self) -> bool {
        self == &Judgments::default()
    }

    /// These calls and `more` (those of `more` last), without repeats. A call of `more` that an
    /// item is general or local, or that a decision stands or is replaced, or that two say the
    /// same or apart, replaces an earlier call of the other kind on it: knowledge first seen as
    /// one project's may be found general once more of it is seen (the rules may have grouped
    /// other workers' entries with it since), and the other way round.
    pub fn with(&self, more: &Judgments) -> Judgments {
        let mut all = self.clone();
        let one_pair = |x: &[String; 2], y: &[String; 2]| x == y || (x[0] == y[1] && x[1] == y[0]);
        for pair in &more.same {
            all.apart.retain(|other| !one_pair(other, pair));
            if !all.same.contains(pair) {
                all.same.push(pair.clone());
            }
        }
        for pair in &more.apart {
            all.same.retain(|other| !one_pair(other, pair));
            if !all.apart.contains(pair) {
                all.apart.push(pair.clone());
            }
        }
        for pair in &more.supersedes {
            if !all.supersedes.contains(pair) {
                all.supersedes.push(pair.clone());
            }
            all.stands.remove(&pair[1]);
        }
        for id in &more.stands {
            all.supersedes.retain(|[_, older]| older != id);
            all.stands.insert(id.clone());
        }
        for id in more.general.keys() {
            all.local.remove(id);
        }
        for id in &more.local {
            all.general.remove(id);
        }
        all.general.extend(more.general.clone());
        all.local.extend(more.local.iter().cloned());
        all
    }

    /// The general wording given for `item`, if any: given to it by its id (its first entry's).
    /// A wording given to an item the rules grouped otherwise since is not carried over to the
    /// item one of its entries is in now, which may say something else.
    pub fn general_wording(&self, item: &Item) -> Option<&str> {
        self.general.get(&item.id).map(String::as_str)
    }

    /// Whether `item` was called this project's only, and not general too: the rules may have
    /// grouped a remark called local with knowledge called general (`twister -T <suite>` with
    /// "every testcase.yaml carries the feature's tag"), and the general knowledge must not be
    /// lost with the remark.
    pub fn is_local(&self, item: &Item) -> bool {
        item.entry_ids().any(|id| self.local.contains(id)) && self.general_wording(item).is_none()
    }
}

/// The calls of the last ```` ```judgments ```` block of `answer`, read (not yet checked); an
/// answer without one makes none.
pub fn parse(answer: &str) -> Result<Judgments, String> {
    let mut judgments = Judgments::default();
    let Some(block) = last_block(answer) else {
        return Ok(judgments);
    };
    for line in block.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (verb, rest) = line.split_once(' ').unwrap_or((line, ""));
        let head = match verb {
            "general" => rest.split_once(": ").map_or(rest, |(head, _)| head),
            _ => rest,
        };
        let ids = ids_in(head);
        let id = |n: usize| {
            ids.get(n)
                .cloned()
                .ok_or_else(|| format!("{line:?} names too few items (c:<id>)"))
        };
        match verb {
            "same" => judgments.same.push([id(0)?, id(1)?]),
            "apart" => judgments.apart.push([id(0)?, id(1)?]),
            "supersedes" => judgments.supersedes.push([id(0)?, id(1)?]),
            "stands" => {
                judgments.stands.insert(id(0)?);
            }
            "local" => {
                judgments.local.insert(id(0)?);
            }
            "general" => {
                let wording = rest
                    .split_once(": ")
                    .map(|(_, w)| w.trim())
                    .filter(|w| !w.is_empty())
                    .ok_or_else(|| format!("{line:?} gives no wording after `c:<id>: `"))?;
                judgments.general.insert(id(0)?, wording.to_string());
            }
            _ => {
                return Err(format!(
                    "{line:?} is not a judgment (same, apart, supersedes, stands, general, local)"
                ))
            }
        }
    }
    Ok(judgments)
}

/// The item ids named as `c:<id>` in `text`.
fn ids_in(text: &str) -> Vec<String> {
    marker_ids(&format!("<!-- {text} -->"))
}

/// The last fenced block of `answer` whose info string is `judgments`.
fn last_block(answer: &str) -> Option<String> {
    let mut found = None;
    let mut open: Option<Vec<&str>> = None;
    for line in answer.lines() {
        let trimmed = line.trim();
        match &mut open {
            None if trimmed.strip_prefix("```").map(str::trim) == Some("judgments") => {
                open = Some(Vec::new())
            }
            None => {}
            Some(lines) if trimmed == "```" => {
                found = Some(lines.join("\n"));
                open = None;
            }
            Some(lines) => lines.push(line),
        }
    }
    found
}

/// Checks the calls against the items of the pass (`items`, read in `context`): what each
/// names must exist and be of the right kind, a decision must replace an older one, and a
/// general wording must name nothing of one mission. The reason when it does not hold.
pub fn check(judgments: &Judgments, items: &[ItemReport], context: &Context) -> Result<(), String> {
    let by_id: BTreeMap<&str, &ItemReport> = items
        .iter()
        .flat_map(|item| item.evidence.iter().map(move |id| (id.as_str(), item)))
        .collect();
    let item = |id: &str| {
        by_id
            .get(id)
            .copied()
            .ok_or_else(|| format!("c:{id} is not an item of this pass"))
    };
    let lesson = |id: &str| {
        item(id).and_then(|i| match i.tag {
            "DECISION" => Err(format!("c:{id} is a decision, not a lesson")),
            _ => Ok(i),
        })
    };
    for [a, b] in &judgments.same {
        if lesson(a)?.id == lesson(b)?.id {
            return Err(format!("c:{a} and c:{b} are one item already"));
        }
    }
    for [a, b] in &judgments.apart {
        if a == b {
            return Err(format!("`apart` names c:{a} twice"));
        }
        if lesson(a)?.id != lesson(b)?.id {
            return Err(format!("c:{a} and c:{b} are two items already"));
        }
    }
    for [newer, older] in &judgments.supersedes {
        let (new, old) = (item(newer)?, item(older)?);
        if new.tag != "DECISION" || old.tag != "DECISION" {
            return Err(format!(
                "only a decision supersedes a decision (c:{newer}, c:{older})"
            ));
        }
        if new.last_seen <= old.last_seen {
            return Err(format!("c:{newer} is not newer than c:{older}"));
        }
    }
    for (id, wording) in &judgments.general {
        lesson(id)?;
        if judgments.local.contains(id) {
            return Err(format!("c:{id} is called both general and local"));
        }
        if wording.chars().count() > SUMMARY_TEXT_CHARS || wording.contains("<!--") {
            return Err(format!("the general wording of c:{id} is not one line of at most {SUMMARY_TEXT_CHARS} characters"));
        }
        if let Some((_, token)) = analyse(wording, context).specifics.first() {
            return Err(format!(
                "the general wording of c:{id} names {token:?}, which is of one mission"
            ));
        }
    }
    for id in &judgments.local {
        lesson(id)?;
    }
    for id in &judgments.stands {
        if item(id)?.tag != "DECISION" {
            return Err(format!("c:{id} is not a decision: only a decision stands"));
        }
        if judgments.supersedes.iter().any(|[_, older]| older == id) {
            return Err(format!("c:{id} is called both replaced and standing"));
        }
    }
    Ok(())
}

/// `items` (read in `context`) with the calls applied: the items said to be the same merged
/// (all their entries in one item), those with entries said to be apart split in two, each
/// decision said to be replaced superseded by its successor and each said to stand not
/// superseded, and each item called general given its general wording. Calls naming items that
/// are not there any more do nothing.
pub fn apply(items: Vec<Item>, judgments: &Judgments, context: &Context) -> Vec<Item> {
    let mut items = items;
    for [a, b] in &judgments.same {
        let (Some(x), Some(y)) = (holding(&items, a), holding(&items, b)) else {
            continue;
        };
        if x == y || items[x].kind == Kind::Decision || items[y].kind == Kind::Decision {
            continue;
        }
        let (first, second) = (x.min(y), x.max(y));
        let removed = items.remove(second);
        let kept = items.remove(first);
        let mut evidence = kept.evidence;
        evidence.extend(removed.evidence);
        items.push(items::item(false, evidence, context));
    }
    for [a, b] in &judgments.apart {
        let Some(x) = holding(&items, a)
            .filter(|&x| items[x].kind != Kind::Decision && items[x].entry_ids().any(|e| e == b))
        else {
            continue;
        };
        let (one, two) = apart(items.remove(x).evidence, a, b);
        // Never empty (each holds its named entry) unless a call names one entry twice.
        for part in [one, two].into_iter().filter(|part| !part.is_empty()) {
            items.push(items::item(false, part, context));
        }
    }
    items.sort_by(|a, b| a.id.cmp(&b.id));
    for [newer, older] in &judgments.supersedes {
        let (Some(new), Some(old)) = (holding(&items, newer), holding(&items, older)) else {
            continue;
        };
        if items[new].kind == Kind::Decision
            && items[old].kind == Kind::Decision
            && items[new].last_seen > items[old].last_seen
        {
            items[old].superseded_by = Some(items[new].id.clone());
        }
    }
    for item in &mut items {
        if item.kind == Kind::Decision && item.entry_ids().any(|id| judgments.stands.contains(id)) {
            item.superseded_by = None;
        }
        item.general = judgments.general_wording(item).map(str::to_string);
    }
    items
}

/// Where in `items` the item holding entry `id` is (an entry is in one item at most).
fn holding(items: &[Item], id: &str) -> Option<usize> {
    items
        .iter()
        .position(|item| item.entry_ids().any(|e| e == id))
}

/// `evidence` (of one item) in two: with entry `a` the entries whose words are at least as like
/// its words as entry `b`'s, with `b` the others.
fn apart(evidence: Vec<Evidence>, a: &str, b: &str) -> (Vec<Evidence>, Vec<Evidence>) {
    let words_of = |id: &str| {
        let text = evidence.iter().find(|e| e.id == id).map_or("", |e| &e.text);
        words(text)
    };
    let (of_a, of_b) = (words_of(a), words_of(b));
    evidence.into_iter().partition(|e| {
        let own = words(&e.text);
        e.id == a || (e.id != b && similarity(&own, &of_a) >= similarity(&own, &of_b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_read_from_the_last_judgments_block() {
        let answer = "text\n```judgments\nlocal c:0123456789\n```\n```judgments\n\
                      same c:0123456789 c:abcdefabcd\n\
                      supersedes c:1111111111 c:2222222222\n\
                      general c:3333333333: run the formatter before committing\n\
                      local c:4444444444\n```\n";
        let judgments = parse(answer).unwrap();
        assert_eq!(
            judgments.same,
            [["0123456789".to_string(), "abcdefabcd".to_string()]]
        );
        assert_eq!(judgments.supersedes.len(), 1);
        assert_eq!(
            judgments.general["3333333333"],
            "run the formatter before committing"
        );
        assert!(judgments.local.contains("4444444444") && judgments.local.len() == 1);
        assert_eq!(parse("no block").unwrap(), Judgments::default());
        assert!(parse("```judgments\nmerge c:0123456789\n```")
            .unwrap_err()
            .contains("is not a judgment"));
        assert!(parse("```judgments\nsame c:0123456789\n```")
            .unwrap_err()
            .contains("too few items"));
    }

    #[test]
    fn a_later_call_on_an_item_replaces_an_earlier_one_of_the_other_kind() {
        let earlier = parse(
            "```judgments\nlocal c:0123456789\ngeneral c:abcdefabcd: run the formatter first\n\
             local c:4444444444\n```",
        )
        .unwrap();
        let later = parse(
            "```judgments\ngeneral c:0123456789: pnpm --filter <package> runs one package\n\
             local c:abcdefabcd\n```",
        )
        .unwrap();
        let all = earlier.with(&later);
        assert_eq!(
            all.local,
            ["4444444444", "abcdefabcd"].map(str::to_string).into()
        );
        assert_eq!(all.general.keys().collect::<Vec<_>>(), ["0123456789"]);
        // The same calls again change nothing.
        assert_eq!(all.with(&later), all);
    }

    #[test]
    fn entries_said_apart_until_a_later_call_says_the_same() {
        let apart = parse("```judgments\napart c:1111111111 c:2222222222\n```").unwrap();
        let same = parse("```judgments\nsame c:2222222222 c:1111111111\n```").unwrap();
        let all = same.with(&apart);
        assert!(all.same.is_empty() && all.apart.len() == 1);
        let all = all.with(&same);
        assert!(all.apart.is_empty() && all.same.len() == 1);
    }

    #[test]
    fn a_decision_stands_until_a_later_call_replaces_it() {
        let replaced = parse("```judgments\nsupersedes c:1111111111 c:2222222222\n```").unwrap();
        let stands = parse("```judgments\nstands c:2222222222\n```").unwrap();
        assert_eq!(stands.stands, ["2222222222".to_string()].into());
        let all = replaced.with(&stands);
        assert!(all.supersedes.is_empty() && all.stands.contains("2222222222"));
        let all = all.with(&replaced);
        assert!(all.stands.is_empty() && all.supersedes.len() == 1);
    }
}
