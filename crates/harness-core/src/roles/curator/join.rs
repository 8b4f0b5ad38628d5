//! The similarity join: which word sets are alike, without comparing each set with every other.
//!
//! Prefix filtering (as in AllPairs and PPJoin): with the words of every set in one global order,
//! rarest first, two sets that share `c` words share one among the first `len - c + 1` words of
//! each. So a set is indexed by its first (rarest) words only, and compared only with the sets
//! it meets there; the common words, which are in most sets, are never looked up. Sets come
//! shortest first, and a length filter skips those too short to reach the threshold with the
//! current one; a positional filter, those that share too few words after the first they share.
//! Every candidate left is then checked exactly: the result is the same as comparing all pairs
//! with [`similarity`], in time close to linear for text, where most words are rare.
//!
//! The bounds are computed with `dice`, the very formula of [`similarity`], so that rounding can
//! never make a filter drop a pair that [`similarity`] would keep.

use std::collections::HashMap;

use super::similarity::{common_words, dice, similarity, weight, MAX_WEIGHT};
use super::Cancelled;

/// Words as numbers: each word of the sets it was made from by its rank in the order of how
/// many sets hold it, rarest first (ties by the word, so the numbering is deterministic).
#[derive(Debug, Clone, Default)]
pub struct Vocabulary {
    ranks: HashMap<String, u32>,
    /// How many sets hold the word of each rank.
    holding: Vec<u32>,
    /// How many sets it was made from.
    sets: usize,
}

impl Vocabulary {
    /// The vocabulary of `sets` (each a list of distinct words).
    pub fn new<'w>(sets: impl IntoIterator<Item = &'w [String]>) -> Self {
        let mut counts: HashMap<&str, u32> = HashMap::new();
        let mut total = 0;
        for set in sets {
            total += 1;
            for word in set {
                *counts.entry(word).or_default() += 1;
            }
        }
        let mut order: Vec<(u32, &str)> = counts.into_iter().map(|(w, n)| (n, w)).collect();
        order.sort_unstable();
        let holding = order.iter().map(|(n, _)| *n).collect();
        let ranks = order
            .into_iter()
            .enumerate()
            .map(|(rank, (_, word))| (word.to_string(), rank as u32))
            .collect();
        Self {
            ranks,
            holding,
            sets: total,
        }
    }

    /// `words` (distinct) as numbers, ascending. A word it does not know gets a number past
    /// every known one, distinct within the set: it counts in the set's size and matches
    /// nothing numbered by this vocabulary, which is all an unknown word can do (two sets'
    /// unknown words must not be compared with each other).
    pub fn ids(&self, words: &[String]) -> Vec<u32> {
        let mut ids: Vec<u32> = words
            .iter()
            .enumerate()
            .map(|(position, word)| {
                self.ranks
                    .get(word.as_str())
                    .copied()
                    .unwrap_or(u32::MAX - position as u32)
            })
            .collect();
        ids.sort_unstable();
        ids
    }

    /// How many of the sets hold `word`.
    pub fn holding(&self, word: &str) -> usize {
        self.ranks
            .get(word)
            .map_or(0, |&rank| self.holding[rank as usize] as usize)
    }

    /// The weight of `word` among the sets (see [`weight`]); an unknown word weighs 1.
    pub fn weight(&self, word: &str) -> u32 {
        self.ranks.get(word).map_or(1, |&rank| {
            weight(self.holding[rank as usize] as usize, self.sets)
        })
    }

    /// `words` (distinct) as numbers with each word repeated by its [`weight`]: the Dice
    /// coefficient of two such lists is the weighted Dice coefficient of the words, and the
    /// join works on them unchanged. Ascending; the copies of a word are consecutive, so the
    /// order stays rarest first. An unknown word is one number, as in [`Vocabulary::ids`].
    pub fn weighted_ids(&self, words: &[String]) -> Vec<u32> {
        let mut ids = Vec::with_capacity(words.len() * 2);
        for (position, word) in words.iter().enumerate() {
            match self.ranks.get(word.as_str()) {
                Some(&rank) => {
                    let copies = weight(self.holding[rank as usize] as usize, self.sets);
                    ids.extend((0..copies).map(|copy| rank * MAX_WEIGHT + copy));
                }
                None => ids.push(u32::MAX - position as u32),
            }
        }
        ids.sort_unstable();
        ids
    }
}

/// The fewest common words with which a set of `a` words and one of `b` words reach
/// `threshold`, or `None` if they cannot. Never below one: sets that share no word are never
/// alike (the curator has always compared only entries that share a word).
fn required_overlap(a: usize, b: usize, threshold: f64) -> Option<usize> {
    let reaches = |common: usize| dice(common, a + b) >= threshold;
    let most = a.min(b);
    if most == 0 || !reaches(most) {
        return None;
    }
    // The estimate of exact arithmetic, then corrected for the rounding of `dice`.
    let estimate = (threshold * (a + b) as f64 / 2.0).ceil();
    let mut common = if estimate >= 1.0 {
        (estimate as usize).min(most)
    } else {
        1
    };
    while common > 1 && reaches(common - 1) {
        common -= 1;
    }
    while !reaches(common) {
        common += 1;
    }
    Some(common)
}

/// What the filters allow for a set of one size, compared with sets no longer than it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Bounds {
    /// The shortest set it can reach the threshold with.
    shortest: usize,
    /// How many of its first words to look up (0: it is like no shorter set).
    probe: usize,
    /// How many of its first words to index, for the longer sets that come later.
    indexed: usize,
    /// The common words needed with a set of each length up to its own (`usize::MAX`: none
    /// are enough).
    needed: Vec<usize>,
}

impl Bounds {
    fn new(len: usize, threshold: f64) -> Self {
        let prefix = |common: usize| len - common + 1;
        let needed: Vec<usize> = (0..=len)
            .map(|b| required_overlap(len, b, threshold).unwrap_or(usize::MAX))
            .collect();
        let shortest = (1..=len).find(|&b| needed[b] != usize::MAX);
        Self {
            shortest: shortest.unwrap_or(usize::MAX),
            // The fewest common words are needed with the shortest partner.
            probe: shortest.map_or(0, |b| prefix(needed[b])),
            // A later set is at least as long, which needs at least as many common words.
            indexed: required_overlap(len, len, threshold).map_or(0, prefix),
            needed,
        }
    }
}

/// Two sets that may be alike, as the join finds them, ready to be checked.
#[derive(Debug, Clone, Copy)]
pub struct Pair<'j> {
    words: [&'j [u32]; 2],
    /// Where the first word they were found to share is in each.
    first_common: [usize; 2],
    /// The common words they need to reach the threshold.
    needed: usize,
}

impl Pair<'_> {
    /// Their exact [`similarity`] if it reaches the threshold, else `None`.
    pub fn reaches(&self) -> Option<f64> {
        let [a, b] = self.words;
        // If they reach the threshold, the word they were found by is the first they share
        // (see `Prefixes::probe`): counting from there is exact. If they do not, counting from
        // there cannot find more than there are, so they still fall short.
        let common = common_words(a, b, self.first_common, self.needed)?;
        Some(dice(common, a.len() + b.len()))
    }
}

/// The groups that similarity reaching `threshold` makes of `sets` (word numbers, ascending,
/// all of one [`Vocabulary`]), transitively: two sets each like a third are one group, even if
/// they are not alike. For each set, the number of one set of its group (the same for the whole
/// group); a set with no word is alone. `cancel` is asked at every set; when it says so, the
/// join stops with [`Cancelled`].
///
/// `copies`: 1 for sets of words, [`MAX_WEIGHT`] for sets of [`Vocabulary::weighted_ids`],
/// where the copies of a word share their postings: only the first is indexed and looked up
/// (the first number two sets share is the first copy of the first word they share).
pub fn groups(
    sets: &[Vec<u32>],
    copies: u32,
    threshold: f64,
    cancel: &dyn Fn() -> bool,
) -> Result<Vec<usize>, Cancelled> {
    let (mut prefixes, order) = Prefixes::new(sets, threshold, copies);
    let mut groups = DisjointSets::new(order.len());
    for later in 0..order.len() {
        if cancel() {
            return Err(Cancelled);
        }
        // The root of the later set's group, kept as it joins groups.
        let mut root = groups.root(later);
        prefixes.probe(later, |mut meeting| {
            // A set already in the group needs no comparing: in a large group (a lesson said a
            // thousand ways), that is most of the sets met. The group it was in when indexed
            // is at hand, and usually still the group's root: nothing else to read (not even
            // the union-find's memory, which a large log does not keep in the caches).
            if meeting.group != root
                && groups.root(meeting.group) != root
                && meeting.first()
                && meeting.pair().is_some_and(|pair| pair.reaches().is_some())
            {
                groups.join(meeting.earlier, later);
                root = groups.root(later);
            }
        });
        let group = groups.root(later);
        prefixes.insert(later, group);
    }
    let mut representative: Vec<usize> = (0..sets.len()).collect();
    for (rank, &set) in order.iter().enumerate() {
        representative[set] = order[groups.root(rank)];
    }
    Ok(representative)
}

/// Calls `visit(a, b, pair)` for candidate pairs of `sets` (word numbers, ascending, all of one
/// [`Vocabulary`]) by their numbers: every pair whose similarity reaches `threshold` is among
/// them, once, and few others are; the caller checks each with [`Pair::reaches`]. `cancel` is
/// asked at every set; when it says so, the join stops with [`Cancelled`].
pub fn candidate_pairs(
    sets: &[Vec<u32>],
    threshold: f64,
    cancel: &dyn Fn() -> bool,
    mut visit: impl FnMut(usize, usize, Pair),
) -> Result<(), Cancelled> {
    let (mut prefixes, order) = Prefixes::new(sets, threshold, 1);
    for later in 0..order.len() {
        if cancel() {
            return Err(Cancelled);
        }
        prefixes.probe(later, |mut meeting| {
            if let Some(pair) = meeting.first().then(|| meeting.pair()).flatten() {
                visit(order[meeting.earlier], order[later], pair);
            }
        });
        prefixes.insert(later, later);
    }
    Ok(())
}

/// One set's place in the index: the set (by rank), where the word is in it, its length, and
/// what the caller said of it when it was inserted (its group).
#[derive(Debug, Clone, Copy)]
struct Posting {
    rank: u32,
    position: u32,
    len: u32,
    group: u32,
}

/// Sets by rank (shortest first, then by number), each indexed by its first words as it is
/// inserted: a set probing the index meets the shorter sets inserted before it that share one
/// of its first words.
struct Prefixes {
    /// The sets one after the other, by rank: comparing two sets then reads two runs of one
    /// array, not two allocations anywhere in memory.
    words: Vec<u32>,
    /// Where each set ends in `words`.
    ends: Vec<usize>,
    /// The filters' bounds for each length of a set (only those: a hand-written entry of
    /// thousands of words must not cost the square of that).
    bounds: HashMap<usize, Bounds>,
    /// Each word's sets, by rank, and where the first of those still long enough is.
    postings: HashMap<u32, (usize, Vec<Posting>)>,
    /// The set that last met each set: a set met through two words is met once.
    last_visitor: Vec<usize>,
    /// How many numbers stand for one word (see [`groups`]): only the first is indexed.
    copies: u32,
}

/// Two sets that met in the index: both by rank, and what the filters need to know.
struct Meeting<'p> {
    earlier: usize,
    later: usize,
    /// What the caller said of the earlier set when it was inserted.
    group: usize,
    /// The set that last met the earlier one.
    last_visitor: &'p mut usize,
    lens: [usize; 2],
    first_common: [usize; 2],
    needed: usize,
    words: &'p [u32],
    ends: &'p [usize],
}

impl<'p> Meeting<'p> {
    /// Whether this is the first time the later set meets the earlier one (a set met through
    /// two of its words is met twice).
    fn first(&mut self) -> bool {
        let first = *self.last_visitor != self.later;
        *self.last_visitor = self.later;
        first
    }

    /// The pair to check, unless too few words are left after the first they share for them
    /// to reach the threshold (the positional filter of PPJoin).
    fn pair(&self) -> Option<Pair<'p>> {
        let most = 1
            + (self.lens[0] - self.first_common[0] - 1)
                .min(self.lens[1] - self.first_common[1] - 1);
        (most >= self.needed).then(|| Pair {
            words: [
                set(self.words, self.ends, self.earlier),
                set(self.words, self.ends, self.later),
            ],
            first_common: self.first_common,
            needed: self.needed,
        })
    }
}

/// The set of rank `rank` in `words`, which `ends` cuts into sets.
fn set<'w>(words: &'w [u32], ends: &[usize], rank: usize) -> &'w [u32] {
    let start = if rank == 0 { 0 } else { ends[rank - 1] };
    &words[start..ends[rank]]
}

impl Prefixes {
    /// The index for `sets`, empty, and the number of the set of each rank. Sets with no word
    /// have no rank: they are like no other.
    fn new(sets: &[Vec<u32>], threshold: f64, copies: u32) -> (Self, Vec<usize>) {
        // Shortest first: each set is then compared with sets no longer than itself, which
        // are indexed by their shorter `indexed` prefixes.
        let mut order: Vec<usize> = (0..sets.len()).filter(|&i| !sets[i].is_empty()).collect();
        order.sort_by_key(|&i| (sets[i].len(), i));
        let mut ends = Vec::with_capacity(order.len());
        let mut words = Vec::with_capacity(order.iter().map(|&i| sets[i].len()).sum());
        let mut bounds = HashMap::new();
        for &number in &order {
            let set = &sets[number];
            words.extend_from_slice(set);
            ends.push(words.len());
            bounds
                .entry(set.len())
                .or_insert_with(|| Bounds::new(set.len(), threshold));
        }
        let prefixes = Self {
            words,
            ends,
            bounds,
            postings: HashMap::new(),
            last_visitor: vec![usize::MAX; order.len()],
            copies: copies.max(1),
        };
        (prefixes, order)
    }

    /// Calls `meet` for each set in the index that set `later` (a rank, not inserted yet)
    /// meets through its first words, unless the lengths rule the pair out; [`Meeting::first`]
    /// tells the first meeting of two sets. Every set it is alike with is met, first through
    /// the first word they share in the global order (a word they share before it would have
    /// met them before).
    fn probe(&mut self, later: usize, mut meet: impl FnMut(Meeting)) {
        let Self {
            words,
            ends,
            bounds,
            postings,
            last_visitor,
            copies,
        } = self;
        let probing = set(words, ends, later);
        let bound = &bounds[&probing.len()];
        for (position, word) in probing[..bound.probe].iter().enumerate() {
            if word % *copies != 0 {
                continue;
            }
            let Some((start, list)) = postings.get_mut(word) else {
                continue;
            };
            // The sets are inserted shortest first: those too short for this set are at the
            // front, and too short for every later set too.
            while *start < list.len() && (list[*start].len as usize) < bound.shortest {
                *start += 1;
            }
            for posting in &list[*start..] {
                let earlier = posting.rank as usize;
                let len = posting.len as usize;
                meet(Meeting {
                    earlier,
                    later,
                    group: posting.group as usize,
                    last_visitor: &mut last_visitor[earlier],
                    lens: [len, probing.len()],
                    first_common: [posting.position as usize, position],
                    needed: bound.needed[len],
                    words,
                    ends,
                });
            }
        }
    }

    /// Indexes set `later` (a rank) by its first words, for the sets after it, with `group`.
    fn insert(&mut self, later: usize, group: usize) {
        let inserted = set(&self.words, &self.ends, later);
        let len = inserted.len() as u32;
        for (position, word) in inserted[..self.bounds[&inserted.len()].indexed]
            .iter()
            .enumerate()
        {
            if word % self.copies != 0 {
                continue;
            }
            let (_, list) = self.postings.entry(*word).or_default();
            list.push(Posting {
                rank: later as u32,
                position: position as u32,
                len,
                group: group as u32,
            });
        }
    }
}

/// Union-find over the numbers `0..size`; the root of a set is its smallest number, so the
/// result does not depend on the order of the joins.
pub(super) struct DisjointSets {
    parent: Vec<usize>,
}

impl DisjointSets {
    /// Every number alone.
    pub(super) fn new(size: usize) -> Self {
        Self {
            parent: (0..size).collect(),
        }
    }

    /// The root of `node`'s set.
    pub(super) fn root(&mut self, mut node: usize) -> usize {
        while self.parent[node] != node {
            self.parent[node] = self.parent[self.parent[node]];
            node = self.parent[node];
        }
        node
    }

    /// Makes the sets of `a` and `b` one.
    pub(super) fn join(&mut self, a: usize, b: usize) {
        let (a, b) = (self.root(a), self.root(b));
        let (low, high) = (a.min(b), a.max(b));
        self.parent[high] = low;
    }
}

/// Word sets added one at a time, each to be found by the sets like it: for lookups against a
/// collection that grows (lines of an identity file) or that is fixed but queried by many
/// (failure modes of the ledger).
#[derive(Debug, Clone)]
pub struct Index {
    threshold: f64,
    sets: Vec<Vec<u32>>,
    postings: HashMap<u32, Vec<u32>>,
    /// How many numbers stand for one word (see [`groups`]).
    copies: u32,
}

impl Index {
    /// An empty index of sets of words for `threshold`.
    pub fn new(threshold: f64) -> Self {
        Self {
            threshold,
            sets: Vec::new(),
            postings: HashMap::new(),
            copies: 1,
        }
    }

    /// An empty index of sets of [`Vocabulary::weighted_ids`] for `threshold`.
    pub fn weighted(threshold: f64) -> Self {
        Self {
            copies: MAX_WEIGHT,
            ..Self::new(threshold)
        }
    }

    /// Adds `set` (word numbers, ascending) as the next set.
    pub fn insert(&mut self, set: Vec<u32>) {
        let number = self.sets.len() as u32;
        for word in &set[..self.prefix(set.len())] {
            if word % self.copies == 0 {
                self.postings.entry(*word).or_default().push(number);
            }
        }
        self.sets.push(set);
    }

    /// The numbers (in order of insertion) of the sets whose similarity with `set` reaches the
    /// threshold. (At a threshold of 0 or below, every set does, even one that shares no word.)
    pub fn similar(&self, set: &[u32]) -> Vec<usize> {
        let mut candidates: Vec<u32> = if self.threshold > 0.0 {
            set[..self.prefix(set.len())]
                .iter()
                .filter(|word| *word % self.copies == 0)
                .filter_map(|word| self.postings.get(word))
                .flatten()
                .copied()
                .collect()
        } else {
            (0..self.sets.len() as u32).collect()
        };
        candidates.sort_unstable();
        candidates.dedup();
        candidates
            .into_iter()
            .map(|number| number as usize)
            .filter(|&number| similarity(&self.sets[number], set) >= self.threshold)
            .collect()
    }

    /// How many first words of a set of `len` words to index and to look up: enough for a
    /// partner of any size, since sets come in any order.
    fn prefix(&self, len: usize) -> usize {
        // The fewest common words are needed with the shortest possible partner.
        (1..=len)
            .find_map(|b| required_overlap(len, b, self.threshold))
            .map_or(0, |common| len - common + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_overlap(a: usize, b: usize, threshold: f64) -> Option<usize> {
        (1..=a.min(b)).find(|&c| dice(c, a + b) >= threshold)
    }

    #[test]
    fn the_required_overlap_is_the_least_that_reaches_the_threshold() {
        for threshold in [
            -1.0,
            0.0,
            1e-9,
            0.1,
            0.3,
            0.4,
            0.5,
            0.6,
            2.0 / 3.0,
            0.7,
            0.8,
            0.9,
            0.999,
            1.0,
            1.0 + 1e-12,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            for a in 0..40 {
                for b in 0..40 {
                    assert_eq!(
                        required_overlap(a, b, threshold),
                        brute_overlap(a, b, threshold),
                        "{a} {b} {threshold}"
                    );
                }
            }
        }
    }

    #[test]
    fn words_are_numbered_rarest_first_and_unknown_words_still_count() {
        let sets: Vec<Vec<String>> = [vec!["b", "c"], vec!["a", "c"], vec!["c"]]
            .iter()
            .map(|s| s.iter().map(|w| w.to_string()).collect())
            .collect();
        let vocabulary = Vocabulary::new(sets.iter().map(Vec::as_slice));
        // a and b once each (ties by the word), c three times.
        assert_eq!(vocabulary.ids(&sets[0]), [1, 2]);
        assert_eq!(vocabulary.ids(&sets[1]), [0, 2]);
        let unknown = vocabulary.ids(&["x".to_string(), "y".to_string(), "c".to_string()]);
        assert_eq!(unknown.len(), 3);
        assert_eq!(unknown[0], 2);
    }

    #[test]
    fn weighted_ids_repeat_each_word_by_its_weight() {
        let sets: Vec<Vec<String>> = (0..30)
            .map(|i| {
                if i == 0 {
                    vec!["a".to_string(), "c".to_string()]
                } else {
                    vec!["c".to_string()]
                }
            })
            .collect();
        let vocabulary = Vocabulary::new(sets.iter().map(Vec::as_slice));
        // "a": one set of thirty, weight round(ln 30) = 3; "c": every set, weight 1.
        assert_eq!(vocabulary.weight("a"), 3);
        assert_eq!(vocabulary.weight("c"), 1);
        let ids = vocabulary.weighted_ids(&sets[0]);
        assert_eq!(ids.len(), 4);
        assert!(ids.windows(2).all(|pair| pair[0] < pair[1]));
        // Dice over the copies is the weighted Dice: 2·1 / (4 + 1).
        let c = vocabulary.weighted_ids(&sets[1]);
        assert!((similarity(&ids, &c) - 0.4).abs() < 1e-12);
        assert_eq!(vocabulary.weighted_ids(&["unknown".to_string()]).len(), 1);
    }

    #[test]
    fn a_set_of_many_words_costs_no_more_than_its_words() {
        // Bounds for every length up to the longest set would take the square of its length.
        let long: Vec<u32> = (0..200_000).collect();
        let sets = vec![vec![1, 2, 3], long.clone(), long, vec![7, 8]];
        let groups = groups(&sets, 1, 0.6, &|| false).unwrap();
        assert_eq!(groups, [0, 1, 1, 3]);
    }

    #[test]
    fn the_index_finds_exactly_the_similar_sets() {
        let sets: Vec<Vec<u32>> = vec![
            vec![1, 2, 3, 4],
            vec![1, 2, 3, 5],
            vec![6, 7],
            vec![1, 2, 3, 4, 5, 6, 7, 8, 9],
            vec![],
        ];
        for threshold in [-1.0, 0.0, 0.3, 0.6, 0.75, 1.0, 1.5, f64::NAN] {
            let mut index = Index::new(threshold);
            for set in &sets {
                index.insert(set.clone());
            }
            for query in &sets {
                let expected: Vec<usize> = (0..sets.len())
                    .filter(|&i| similarity(&sets[i], query) >= threshold)
                    .collect();
                assert_eq!(index.similar(query), expected, "{query:?} {threshold}");
            }
        }
    }
}
