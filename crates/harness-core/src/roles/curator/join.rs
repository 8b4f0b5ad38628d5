//! The similarity join: which word sets are alike, without comparing each set with every other.
//!
//! Prefix filtering (as in AllPairs and PPJoin): with the words of every set in one global order,
//! rarest first, two sets that share `c` words share one among the first `len - c + 1` words of
//! each. So a set is indexed by its first (rarest) words only, and compared only with the sets
//! it meets there; the common words, which are in most sets, are never looked up. Sets come
//! shortest first, and a length filter skips those too short to reach the threshold with the
//! current one; a positional filter, those that share too few words after the first they share;
//! a signature filter (each set's words as the bits of one number), those of which too few of the
//! later set's words from there on can be in the earlier one. Every candidate left is then checked
//! exactly: the result is the same as comparing all pairs with [`similarity`], in time close to
//! linear for text, where most words are rare.
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
            // thousand ways), that is most of the sets met. Its group as last seen is in the
            // posting, and usually still the group's root: nothing else to read (not even the
            // union-find's memory, which a large log does not keep in the caches). Then the
            // filters, which read only the posting too (what they rule out at a first meeting
            // they rule out at every later one: they may come before the visitor mark); only
            // then the union-find, whose root is kept in the posting for the next sets, and the
            // earlier set's words.
            if *meeting.group as usize == root {
                return;
            }
            let Some(pair) = meeting.pair() else {
                return;
            };
            *meeting.group = groups.root(*meeting.group as usize) as u32;
            if *meeting.group as usize != root && meeting.first() && pair.reaches().is_some() {
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
            // The filters first: a pair they rule out at its first meeting, they rule out at
            // every later one (fewer words are left after a later word).
            if let Some(pair) = meeting.pair().filter(|_| meeting.first()) {
                visit(order[meeting.earlier], order[later], pair);
            }
        });
        prefixes.insert(later, later);
    }
    Ok(())
}

/// One set's place in the index: the set (by rank), where the word is in it, its length, its
/// [`Signature`], and what the caller said of it (its group, as last seen).
#[derive(Debug, Clone, Copy)]
struct Posting {
    rank: u32,
    position: u32,
    len: u32,
    group: u32,
    /// Here, not by rank elsewhere: the filters then read the postings one after the other
    /// and nothing else.
    signature: Signature,
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
    /// Each set's [`Signature`], by rank, for its postings.
    signatures: Vec<Signature>,
    /// The set that last met each set: a set met through two words is met once.
    last_visitor: Vec<usize>,
    /// How many numbers stand for one word (see [`groups`]): only the first is indexed.
    copies: u32,
}

/// Two sets that met in the index: both by rank, and what the filters need to know.
struct Meeting<'p> {
    earlier: usize,
    later: usize,
    /// What the caller said of the earlier set (its group as last seen), for it to update.
    group: &'p mut u32,
    /// The set that last met the earlier one.
    last_visitor: &'p mut usize,
    lens: [usize; 2],
    first_common: [usize; 2],
    needed: usize,
    /// The earlier set's [`Signature`].
    signature: Signature,
    /// The later set's numbers from the first word they share on.
    rest: &'p Rest,
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
    /// to reach the threshold (the positional filter of PPJoin), or too few of the later set's
    /// words from there on are in the earlier one's [`Signature`]. Both bounds read only what
    /// is at hand: the earlier set's words, far away in memory for a large log, are read only
    /// for the pairs left (at 300,000 synthetic entries, one in ten of those the positional
    /// filter alone left).
    fn pair(&self) -> Option<Pair<'p>> {
        let most = 1
            + (self.lens[0] - self.first_common[0] - 1)
                .min(self.lens[1] - self.first_common[1] - 1);
        let enough = most >= self.needed && self.rest.shared_at_most(self.signature) >= self.needed;
        enough.then(|| Pair {
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

/// A set's words as the bits of one number, each word by a hash of it (a one-number Bloom
/// filter): a word of another set whose bit is not there is not in the set. With the low
/// weighted threshold, most pairs met share one word of their prefixes and no more; this
/// tells most of them apart without reading the earlier set. 128 bits, not 64: a set of ten
/// words then sets a bit of another word in about one case in thirteen, not one in seven, and
/// the join over 1,000,000 synthetic entries took a third less time.
type Signature = u128;

/// The bit of the word of number `number`, of which there are `copies` (see [`groups`]).
fn bit(number: u32, copies: u32) -> u32 {
    // Fibonacci hashing: word numbers are ranks, consecutive for words of similar counts.
    (number / copies).wrapping_mul(0x9E37_79B9) >> (u32::BITS - Signature::BITS.ilog2())
}

/// The [`Signature`] of `set`.
fn signature(set: &[u32], copies: u32) -> Signature {
    set.iter()
        .fold(0, |bits, &number| bits | 1 << bit(number, copies))
}

/// The numbers of the set being probed from the word being looked up on, by bit: what an
/// earlier set can share with it from there, in a few operations whatever their lengths.
#[derive(Debug, Clone)]
struct Rest {
    numbers: [u32; Signature::BITS as usize],
    /// The bits of those numbers.
    bits: Signature,
}

impl Rest {
    /// All of `set`.
    fn new(set: &[u32], copies: u32) -> Self {
        let mut rest = Self {
            numbers: [0; Signature::BITS as usize],
            bits: 0,
        };
        for &number in set {
            let bit = bit(number, copies);
            rest.numbers[bit as usize] += 1;
            rest.bits |= 1 << bit;
        }
        rest
    }

    /// Leaves out `number`, the first of those left.
    fn pass(&mut self, number: u32, copies: u32) {
        let bit = bit(number, copies);
        self.numbers[bit as usize] -= 1;
        if self.numbers[bit as usize] == 0 {
            self.bits &= !(1 << bit);
        }
    }

    /// The most of these numbers that a set of signature `signature` can share: those of the
    /// bits it has.
    fn shared_at_most(&self, signature: Signature) -> usize {
        let mut common = self.bits & signature;
        let mut most = 0;
        while common != 0 {
            most += self.numbers[common.trailing_zeros() as usize] as usize;
            common &= common - 1;
        }
        most
    }
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
        let copies = copies.max(1);
        let mut signatures = Vec::with_capacity(order.len());
        for &number in &order {
            let set = &sets[number];
            words.extend_from_slice(set);
            ends.push(words.len());
            signatures.push(signature(set, copies));
            bounds
                .entry(set.len())
                .or_insert_with(|| Bounds::new(set.len(), threshold));
        }
        let prefixes = Self {
            words,
            ends,
            bounds,
            postings: HashMap::new(),
            signatures,
            last_visitor: vec![usize::MAX; order.len()],
            copies,
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
            signatures: _,
            last_visitor,
            copies,
        } = self;
        let probing = set(words, ends, later);
        let bound = &bounds[&probing.len()];
        let mut rest = Rest::new(probing, *copies);
        for (position, &word) in probing[..bound.probe].iter().enumerate() {
            let indexed = (word % *copies == 0).then(|| postings.get_mut(&word));
            let Some((start, list)) = indexed.flatten() else {
                rest.pass(word, *copies);
                continue;
            };
            // The sets are inserted shortest first: those too short for this set are at the
            // front, and too short for every later set too.
            while *start < list.len() && (list[*start].len as usize) < bound.shortest {
                *start += 1;
            }
            for posting in &mut list[*start..] {
                let earlier = posting.rank as usize;
                let len = posting.len as usize;
                meet(Meeting {
                    earlier,
                    later,
                    group: &mut posting.group,
                    last_visitor: &mut last_visitor[earlier],
                    lens: [len, probing.len()],
                    first_common: [posting.position as usize, position],
                    needed: bound.needed[len],
                    signature: posting.signature,
                    rest: &rest,
                    words,
                    ends,
                });
            }
            rest.pass(word, *copies);
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
                signature: self.signatures[later],
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
    use proptest::prelude::*;

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
        // Nor the filters at each of the many words through which two such sets meet.
        let mut pairs = Vec::new();
        candidate_pairs(&sets, 0.6, &|| false, |a, b, _| pairs.push((a, b))).unwrap();
        assert_eq!(pairs, [(1, 2)]);
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

    /// Sets of words from a small vocabulary (so that they share many), as numbers with
    /// `copies` numbers a word, each word repeated by a weight of its own.
    fn numbered(sets: &[Vec<u32>], weights: &[u32], copies: u32) -> Vec<Vec<u32>> {
        sets.iter()
            .map(|set| {
                let mut words = set.clone();
                words.sort_unstable();
                words.dedup();
                let mut ids: Vec<u32> = words
                    .iter()
                    .flat_map(|&word| {
                        let repeat = if copies == 1 {
                            1
                        } else {
                            weights[word as usize]
                        };
                        (0..repeat).map(move |copy| word * copies + copy)
                    })
                    .collect();
                ids.sort_unstable();
                ids
            })
            .collect()
    }

    /// Each set's group by the first set of it, comparing every pair.
    fn every_pair(sets: &[Vec<u32>], threshold: f64) -> Vec<usize> {
        let mut groups = DisjointSets::new(sets.len());
        for a in 0..sets.len() {
            for b in a + 1..sets.len() {
                let shared = common_words(&sets[a], &sets[b], [0, 0], 0).unwrap_or(0);
                if shared > 0 && similarity(&sets[a], &sets[b]) >= threshold {
                    groups.join(a, b);
                }
            }
        }
        (0..sets.len()).map(|set| groups.root(set)).collect()
    }

    /// `representative` (one set of each group) as the first set of each group.
    fn by_first(representative: &[usize]) -> Vec<usize> {
        (0..representative.len())
            .map(|set| {
                (0..=set)
                    .find(|&first| representative[first] == representative[set])
                    .unwrap()
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn the_join_groups_as_comparing_every_pair(
            sets in prop::collection::vec(prop::collection::vec(0u32..40, 0..14), 0..60),
            weights in prop::collection::vec(1..=MAX_WEIGHT, 40),
            weighted in any::<bool>(),
            threshold in prop_oneof![
                0.0..=1.0f64,
                prop::sample::select(vec![0.3, 0.6, 0.0, -0.5, 1.0, 1.5, f64::NAN]),
            ],
        ) {
            let copies = if weighted { MAX_WEIGHT } else { 1 };
            let sets = numbered(&sets, &weights, copies);
            let joined = groups(&sets, copies, threshold, &|| false).unwrap();
            prop_assert_eq!(by_first(&joined), every_pair(&sets, threshold));
        }

        #[test]
        fn every_alike_pair_is_a_candidate_once(
            sets in prop::collection::vec(prop::collection::vec(0u32..40, 0..14), 0..60),
            threshold in prop_oneof![0.0..=1.0f64, Just(0.3), Just(0.6)],
        ) {
            let sets = numbered(&sets, &[], 1);
            let mut candidates = Vec::new();
            candidate_pairs(&sets, threshold, &|| false, |a, b, pair| {
                candidates.push(((a.min(b), a.max(b)), pair.reaches().is_some()));
            })
            .unwrap();
            let mut pairs: Vec<(usize, usize)> = candidates.iter().map(|(pair, _)| *pair).collect();
            pairs.sort_unstable();
            let found = pairs.len();
            pairs.dedup();
            prop_assert_eq!(found, pairs.len(), "a pair met twice");
            let mut reached: Vec<(usize, usize)> = candidates
                .iter()
                .filter(|(_, reaches)| *reaches)
                .map(|(pair, _)| *pair)
                .collect();
            reached.sort_unstable();
            let alike: Vec<(usize, usize)> = (0..sets.len())
                .flat_map(|a| (a + 1..sets.len()).map(move |b| (a, b)))
                .filter(|&(a, b)| {
                    common_words(&sets[a], &sets[b], [0, 0], 1).is_some()
                        && similarity(&sets[a], &sets[b]) >= threshold
                })
                .collect();
            prop_assert_eq!(reached, alike);
        }

        #[test]
        fn a_signature_bounds_the_words_shared(
            a in prop::collection::vec(0u32..200, 0..20),
            b in prop::collection::vec(0u32..200, 0..20),
            weights in prop::collection::vec(1..=MAX_WEIGHT, 200),
            from in 0usize..40,
        ) {
            let sets = numbered(&[a, b], &weights, MAX_WEIGHT);
            let (a, b) = (&sets[0], &sets[1]);
            let from = from.min(b.len());
            let mut rest = Rest::new(b, MAX_WEIGHT);
            for &number in &b[..from] {
                rest.pass(number, MAX_WEIGHT);
            }
            let shared = a.iter().filter(|number| b[from..].contains(number)).count();
            prop_assert!(rest.shared_at_most(signature(a, MAX_WEIGHT)) >= shared);
            // And a set's own words are all in its signature.
            prop_assert_eq!(rest.shared_at_most(signature(b, MAX_WEIGHT)), b.len() - from);
        }
    }
}
