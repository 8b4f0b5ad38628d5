//! When two memory entries say the same thing, and what in them belongs to one mission.
//!
//! A text is read token by token (split at whitespace, surrounding punctuation trimmed). A token
//! that names something of one mission is *specific* ([`Specific`]): a feature id, a run or
//! mission id, the project's name, an e-mail address, a URL, a host and port, a date or a time,
//! a number of three digits or more, a path (`src/db/`, `a/b/c.ts`, `/api/v1`, or a directory
//! that the mission's paths name, `build/dev` of `build/dev/app` or beside `build/asan`), an
//! `npm`-style `name:qualifier`. Identifiers (`snake_case`, `CamelCase`, `file.ext`) are noted
//! too: they may name the project's code as well as a tool's.
//!
//! The words compared are the content words of the rest and of specific tokens but feature and
//! run ids, dates and times (they differ between runs of the same lesson): lowercase, `n't` read
//! as `not`, a path reduced to its last two components, flags kept whole as well as split, a
//! word with a prefix kept whole (`pre-commit`), common English words and filler verbs (`the`,
//! `use`, `always`…) dropped, irregular past tenses and a light stemmer folding plurals and
//! `-ed`/`-ing`. Two word sets are compared by their Dice coefficient, each word weighted by how
//! rare it is among the sets compared (see [`weight`]): what is specific to a lesson (a tool, a
//! flag, an error text) counts more than a word every entry has.

use std::collections::{BTreeSet, HashMap, HashSet};

/// Words that carry no subject: dropped before comparing. Negations are kept: `do not X` and `X`
/// must not look alike. Sorted, for a binary search (kept in lines: rustfmt would put a word of
/// ten letters or more on each).
#[rustfmt::skip]
const STOPWORDS: &[&str] = &[
    "a", "about", "above", "across", "after", "again", "against", "all", "along", "also",
    "although", "always", "am", "among", "an", "and", "any", "are", "as", "at", "be", "because",
    "been", "before", "being", "between", "beyond", "both", "but", "by", "can", "could", "despite",
    "did", "do", "does", "doing", "done", "during", "each", "eg", "else", "etc", "every", "except",
    "for", "from", "get", "gets", "got", "had", "has", "have", "having", "he", "her", "here",
    "herself", "him", "himself", "his", "how", "i", "ie", "if", "in", "instead", "into", "is", "it",
    "its", "itself", "just", "let", "make", "makes", "me", "more", "most", "must", "my", "myself",
    "need", "needs", "of", "on", "once", "only", "or", "other", "our", "ourselves", "out", "over",
    "own", "per", "same", "she", "should", "since", "so", "some", "such", "sure", "than", "that",
    "the", "their", "them", "themselves", "then", "there", "these", "they", "this", "those",
    "though", "through", "to", "too", "toward", "towards", "unless", "unlike", "until", "up",
    "upon", "us", "use", "used", "uses", "using", "very", "via", "was", "we", "were", "what",
    "when", "where", "whether", "which", "while", "who", "why", "will", "with", "within", "would",
    "you", "your", "yourself", "yourselves",
];

/// What a specific token names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Specific {
    /// A feature id of the mission (`F-003`), or anything shaped like one.
    FeatureId,
    /// A run id (`1777076234-worker-F-023`) or a mission id (`m-1777076234-1a2b3c`).
    RunId,
    /// The project's own name.
    Project,
    /// An e-mail address.
    Email,
    /// A URL.
    Url,
    /// A host name of one service (`world.openfoodfacts.net`, `api.shop.test`): three labels or
    /// more, or a name in a private or test domain (`.test`, `.local`, `.internal`).
    Host,
    /// A host and port (`localhost:3001`, `:8080`).
    HostPort,
    /// A date or a time of day.
    Time,
    /// A number of three digits or more, a decimal number, an address.
    Number,
    /// A path: three components or more, an absolute one, or one ending in `/` or a file.
    Path,
    /// A `name:qualifier` (an `npm run` script such as `db:seed`).
    Name,
    /// A password given (`the password lantern-preview-7`).
    Secret,
}

impl Specific {
    /// What stands for it in a wording that says what several entries said with different ones.
    pub fn placeholder(self) -> &'static str {
        match self {
            Specific::FeatureId => "<feature>",
            Specific::RunId => "<run id>",
            Specific::Project => "<project>",
            Specific::Email => "<e-mail>",
            Specific::Url => "<url>",
            Specific::Host => "<host>",
            Specific::HostPort => "<host:port>",
            Specific::Time => "<time>",
            Specific::Number => "<n>",
            Specific::Path => "<path>",
            Specific::Name => "<name>",
            Specific::Secret => "<secret>",
        }
    }
}

/// A project's name shorter than this (in characters) is taken for it only as a whole part of a
/// token: glued inside a longer word, so short a name is as often a coincidence (`mkdocs`).
const WHOLE_NAME_BELOW: usize = 6;

/// What is known of the mission whose entries are read: its project's name and its feature
/// ids (as the log's entries give them), specific wherever they appear in a text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    project: Option<String>,
    features: HashSet<String>,
    /// The project's directories that its paths name (`build/dev` of
    /// `build/dev/compile_commands.json`): paths too where they stand alone.
    directories: HashSet<String>,
    /// The identifiers its decisions name (`booking_status`): names the project chose.
    chosen: HashSet<String>,
    /// The passwords its texts give (`the password lantern-preview-7`).
    secrets: HashSet<String>,
}

impl Context {
    /// The context of a mission of the project directory `project` (its last component is the
    /// project's name; one of fewer than four characters is too likely a word to be taken for
    /// it) with the feature ids `features`.
    pub fn new<'f>(project: &str, features: impl IntoIterator<Item = &'f str>) -> Self {
        let name = project
            .trim_end_matches(['/', '\\'])
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or("")
            .to_lowercase();
        Self {
            project: (name.chars().count() >= 4).then_some(name),
            features: features.into_iter().map(str::to_lowercase).collect(),
            directories: HashSet::new(),
            chosen: HashSet::new(),
            secrets: HashSet::new(),
        }
    }

    /// Whether `token` (lowercase) names the project: it holds the project's name (`vaporapi_test`,
    /// `appqtqmlapp`), as a whole part of it when the name is short (`rover_control` for
    /// `rover`; `mkdocs` is no project `docs`).
    fn names_project(&self, token: &str) -> bool {
        self.project.as_deref().is_some_and(|name| {
            if name.chars().count() >= WHOLE_NAME_BELOW {
                token.contains(name)
            } else {
                token
                    .split(|c: char| !c.is_alphanumeric())
                    .any(|part| part == name)
            }
        })
    }

    /// The context with the identifiers that `decisions` (the texts of the mission's
    /// decisions) name: what a decision names is the project's, however many features name it.
    pub fn with_names_chosen_in<'t>(
        mut self,
        decisions: impl IntoIterator<Item = &'t str>,
    ) -> Self {
        self.chosen
            .extend(decisions.into_iter().flat_map(identifiers_of));
        self
    }

    /// The context with the passwords that `texts` give: the token after "password",
    /// "passphrase" or "passwd" (and an "is" or "was" after it) that looks like a value, with a
    /// digit, `-` or `_` in it ("the password lantern-preview-7"; not "the passphrase files").
    /// Such a token is the mission's wherever it stands ("asked for it (lantern-preview-7)").
    pub fn with_passwords_in<'t>(mut self, texts: impl IntoIterator<Item = &'t str>) -> Self {
        const NAMES: &[&str] = &["passphrase", "passwd", "password"];
        for text in texts {
            if !["assw", "ASSW", "assphrase", "ASSPHRASE"]
                .iter()
                .any(|part| text.contains(part))
            {
                continue;
            }
            let lowered = text.to_lowercase();
            let words: Vec<&str> = lowered.split_whitespace().map(trimmed).collect();
            for (at, word) in words.iter().enumerate() {
                if !NAMES.contains(word) {
                    continue;
                }
                let skip = usize::from(matches!(words.get(at + 1), Some(&("is" | "was"))));
                let Some(value) = words.get(at + 1 + skip) else {
                    continue;
                };
                let valued = value.contains(|c: char| c.is_ascii_digit() || c == '-' || c == '_');
                if valued && !value.starts_with('<') && value.len() >= 4 {
                    self.secrets.insert((*value).to_string());
                }
            }
        }
        self
    }

    /// Whether the mission's decisions name `identifier` (lowercase).
    pub fn chose(&self, identifier: &str) -> bool {
        self.chosen.contains(identifier)
    }

    /// The context with the directories of the relative paths that `texts` name, of two
    /// components or more (`tests/fixtures` of `tests/fixtures/tiny_leaves/`), and the
    /// two-component tokens of which two share their first component (`build/dev` and
    /// `build/asan`): a token such as `build/dev`, which could be prose (`and/or`) or a tool's
    /// name (`sidekiq/testing`), is then known to be the project's directory.
    pub fn with_directories_of<'t>(mut self, texts: impl IntoIterator<Item = &'t str>) -> Self {
        // The two-component tokens by their first component: two of them under one
        // (`build/dev`, `build/asan`) are the children of one directory of the project, where
        // prose pairs words (`and/or`, `read/write`) each in its own way.
        let mut pairs: HashMap<String, HashSet<String>> = HashMap::new();
        for text in texts {
            for token in text.split_whitespace().flat_map(|t| t.split(GLUE)) {
                if !token.contains('/') {
                    continue;
                }
                let token = trimmed(token).to_lowercase();
                if token.starts_with(['/', '\\', '~', '.']) {
                    continue;
                }
                if !looks_like_path(&token) {
                    if let Some((parent, child)) = two_components(&token) {
                        pairs
                            .entry(parent.to_string())
                            .or_default()
                            .insert(child.to_string());
                    }
                    continue;
                }
                let components: Vec<&str> = token.split('/').filter(|c| !c.is_empty()).collect();
                for end in 2..components.len() {
                    self.directories.insert(components[..end].join("/"));
                }
            }
        }
        for (parent, children) in pairs {
            if children.len() >= 2 {
                self.directories
                    .extend(children.iter().map(|child| format!("{parent}/{child}")));
            }
        }
        self
    }

    /// Whether `token` (lowercase) names one of the project's directories.
    fn is_directory(&self, token: &str) -> bool {
        !self.directories.is_empty() && self.directories.contains(token.trim_end_matches('/'))
    }
}

/// The two components of `token` (`build/dev`), if it is two words of letters, digits, `_`, `-`
/// or `.` joined by one `/`, the first starting with a letter.
fn two_components(token: &str) -> Option<(&str, &str)> {
    let (parent, child) = token.split_once('/')?;
    let part = |c: &str| {
        !c.is_empty()
            && c.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    };
    (part(parent) && part(child) && parent.starts_with(|c: char| c.is_ascii_alphabetic()))
        .then_some((parent, child))
}

/// A text as the curator reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// The content words, normalised, sorted and without repeats.
    pub words: Vec<String>,
    /// The specific tokens, lowercase, in order.
    pub specifics: Vec<(Specific, String)>,
    /// The identifiers and file names, lowercase, in order.
    pub identifiers: Vec<String>,
}

impl Analysis {
    /// Whether it names nothing of one mission: no specific token.
    pub fn is_general(&self) -> bool {
        self.specifics.is_empty()
    }
}

/// The content words of `text`, normalised, sorted and without repeats (no context: only what
/// looks like a feature id is one).
pub fn words(text: &str) -> Vec<String> {
    read(text, &Context::default(), false).words
}

/// `text` read in `context`.
pub fn analyse(text: &str, context: &Context) -> Analysis {
    read(text, context, true)
}

/// `text` read in `context`, but its identifiers (what the grouping of every entry needs).
pub fn read_words(text: &str, context: &Context) -> Analysis {
    read(text, context, false)
}

/// `wording` (with `own`, its specific tokens) as the text of an item whose entries say `texts`:
/// each specific token of it (but the project's name) that one of `texts` does not hold is
/// replaced by its placeholder, so that entries differing in such tokens are not shown in one
/// of their wordings.
pub fn generalise<'t>(
    (wording, own): (&str, &[(Specific, String)]),
    texts: impl Iterator<Item = &'t str>,
    context: &Context,
) -> String {
    if own.iter().all(|(kind, _)| *kind == Specific::Project) {
        return wording.to_string();
    }
    let others: BTreeSet<&str> = texts.filter(|text| *text != wording).collect();
    let others: Vec<Vec<(Specific, String)>> = others
        .into_iter()
        .map(|text| read_words(text, context).specifics)
        .collect();
    replace_specifics(wording, context, |kind, token| {
        kind == Specific::Project
            || others
                .iter()
                .all(|theirs| theirs.iter().any(|(k, t)| *k == kind && t == token))
    })
}

/// `text` with each specific token for which `keep` (given its kind and lowercase form) says no
/// replaced by its placeholder; the rest byte for byte.
pub fn replace_specifics(
    text: &str,
    context: &Context,
    keep: impl Fn(Specific, &str) -> bool,
) -> String {
    let mut out = String::with_capacity(text.len());
    for piece in text.split_inclusive(char::is_whitespace) {
        let token = piece.trim_end_matches(char::is_whitespace);
        let core = trimmed(token);
        let lowered = core.to_lowercase();
        match specific(&lowered, context) {
            Some(kind) if !core.is_empty() && !keep(kind, &lowered) => {
                let start = token.len() - token.trim_start_matches(TRIM_START).len();
                out.push_str(&token[..start]);
                out.push_str(kind.placeholder());
                out.push_str(&token[start + core.len()..]);
                out.push_str(&piece[token.len()..]);
            }
            _ => out.push_str(piece),
        }
    }
    out
}

/// Reads `text`; `identifiers`: whether to note identifiers too (a cost that the grouping, which
/// reads every entry, does not need).
fn read(text: &str, context: &Context, identifiers: bool) -> Analysis {
    let mut lowered = text.to_lowercase();
    // Most texts have no `n't`: no second copy for them.
    if lowered.contains("n't") {
        lowered = lowered.replace("n't", " not");
    }
    // A run that timed out hung until its timeout; "timed" alone ("timed the build") did not.
    if lowered.contains("timed out") {
        lowered = lowered.replace("timed out", "timeout");
    }
    let lowered = join_digit_groups(lowered);
    let mut analysis = Analysis::default();
    let add = |run: &str, words: &mut Vec<String>| {
        if run.is_empty()
            || STOPWORDS.binary_search(&run).is_ok()
            || UNITS.binary_search(&run).is_ok()
        {
            return;
        }
        if run.bytes().all(|b| b.is_ascii_digit()) {
            // Small numbers are counts that differ between runs of one lesson; larger ones are
            // values (a port, an amount) and worth comparing.
            if run.len() >= 3 {
                words.push(run.to_string());
            }
            return;
        }
        // The project's name says nothing of what a lesson is about (the token is noted).
        if context.names_project(run) {
            return;
        }
        let stemmed = stem(irregular(run).unwrap_or(run));
        if !stemmed.is_empty() {
            words.push(one_word(&stemmed).map_or(stemmed, str::to_string));
        }
    };
    // Code glued to a word is read apart (`describe("F-002` names a feature id).
    for token in lowered.split_whitespace().flat_map(|t| t.split(GLUE)) {
        let token = trimmed(token);
        if token.is_empty() {
            continue;
        }
        let specific = specific(token, context);
        if let Some(kind) = specific {
            analysis.specifics.push((kind, token.to_string()));
            if kind == Specific::Time {
                // Which date or time differs between runs of one lesson; that it is one does not.
                let concept = if token.contains(':') { "time" } else { "date" };
                analysis.words.push(stem(concept));
            }
            if matches!(kind, Specific::FeatureId | Specific::RunId | Specific::Time) {
                continue;
            }
        }
        if specific == Some(Specific::Email) {
            // An address is one thing: two addresses of one domain are not alike.
            analysis.words.push(token.to_string());
            continue;
        }
        let compared = match specific {
            Some(Specific::Path | Specific::Url | Specific::HostPort) => last_components(token),
            _ => token,
        };
        if compared.starts_with('-')
            && compared.bytes().any(|b| b.is_ascii_alphanumeric())
            && specific.is_none()
        {
            let flag = compared.split('=').next().unwrap_or(compared);
            analysis.words.push(format!("`{flag}"));
        }
        // A word with a prefix (`pre-commit`, `non-null`) is one word, not two: `commit`
        // of `pre-commit` is not the commit of `before each commit`.
        let prefixed = specific.is_none()
            && compared.split_once('-').is_some_and(|(prefix, rest)| {
                PREFIXES.binary_search(&prefix).is_ok()
                    && rest.len() >= 2
                    && rest.bytes().all(|b| b.is_ascii_lowercase())
            });
        if prefixed {
            analysis.words.push(stem(compared));
            continue;
        }
        for run in compared.split(|c: char| !c.is_alphanumeric()) {
            add(run, &mut analysis.words);
        }
    }
    if identifiers {
        analysis.identifiers = identifiers_of(text);
    }
    analysis.words.sort();
    analysis.words.dedup();
    analysis
}

/// The identifiers, constants' names and file names of `text`, lowercase, in order: the atoms
/// of code (`assert_cmd::Command::cargo_bin(…)` → `assert_cmd`, `cargo_bin`), not a constant
/// given a value (`GIT_PAGER=cat`).
pub fn identifiers_of(text: &str) -> Vec<String> {
    let atom_char = |c: char| c.is_alphanumeric() || matches!(c, '_' | '.' | '-');
    let mut atoms = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(atom_char) {
        let end = rest[start..]
            .find(|c: char| !atom_char(c))
            .map_or(rest.len(), |e| start + e);
        // A constant given a value (`GIT_PAGER=cat`) is a setting of a tool, not a name the
        // project chose.
        let assigned = rest[end..].starts_with('=');
        if !(assigned && is_constant(&rest[start..end])) {
            atoms.push(&rest[start..end]);
        }
        rest = &rest[end..];
    }
    atoms
        .into_iter()
        // A flag's dotted name (`-Dit.test`, `-Dspring.profiles.active`) is an option of its
        // tool, not a file name.
        .filter(|atom| !(atom.starts_with('-') && atom.contains('.')))
        .map(|atom| atom.trim_matches(['.', '-']))
        .filter(|atom| is_identifier(atom))
        .map(str::to_lowercase)
        .collect()
}

/// `text` with groups of three digits or more separated by single spaces joined
/// (`4242 4242 4242 4242` is the number `4242424242424242`).
fn join_digit_groups(text: String) -> String {
    let group = |w: &str| {
        let w = w.trim_end_matches([',', ';', '.', ')']);
        w.len() >= 3 && w.bytes().all(|b| b.is_ascii_digit())
    };
    let mut previous = false;
    let joinable = text.split(' ').any(|word| {
        let is_group = group(word);
        let both = previous && is_group;
        previous = is_group;
        both
    });
    if !joinable {
        return text;
    }
    let mut joined = String::with_capacity(text.len());
    let mut previous_group = false;
    for (index, word) in text.split(' ').enumerate() {
        let is_group = group(word);
        if index > 0 && !(previous_group && is_group) {
            joined.push(' ');
        }
        joined.push_str(word);
        previous_group = is_group;
    }
    joined
}

/// Units of time and size: like the numbers they follow, they say how much, not what about
/// ("the first install takes 14 minutes" and "the first epoch takes 4 minutes longer" are not
/// one lesson). Sorted.
const UNITS: &[&str] = &[
    "gb", "hour", "hours", "kb", "mb", "minute", "minutes", "ms", "second", "seconds",
];

/// Units the words of a text keep: a day or a pixel size says what a lesson is about more often
/// than [`UNITS`] do ("the daily digest", "the 600 px covers"). Sorted.
const OTHER_UNITS: &[&str] = &["day", "days", "px", "s"];

/// Whether `word` (lowercase) is a unit: a number it follows says how much.
pub fn is_unit(word: &str) -> bool {
    UNITS.binary_search(&word).is_ok() || OTHER_UNITS.binary_search(&word).is_ok()
}

/// English prefixes that make one word with what follows their hyphen. Sorted.
const PREFIXES: &[&str] = &[
    "anti", "co", "de", "multi", "non", "post", "pre", "re", "semi", "sub", "un",
];

/// Where a token of code is cut into the tokens it glues together.
const GLUE: [char; 5] = ['(', '"', '[', '{', '`'];

/// A token without the punctuation around it: quotes, brackets, and a sentence's `,;:.!?`.
pub fn trimmed(token: &str) -> &str {
    token
        .trim_start_matches(TRIM_START)
        .trim_end_matches(TRIM_END)
}

/// What [`trim`] takes off the start of a token.
const TRIM_START: [char; 7] = ['`', '\'', '"', '(', '[', '{', '<'];
/// What [`trim`] takes off the end of a token.
const TRIM_END: [char; 13] = [
    '`', '\'', '"', ')', ']', '}', '>', ',', ';', ':', '.', '!', '?',
];

/// What the (lowercase, trimmed) `token` names, if it is something of one mission.
fn specific(token: &str, context: &Context) -> Option<Specific> {
    let bytes = token.as_bytes();
    if bytes.iter().all(u8::is_ascii_lowercase) {
        // A plain word (most tokens): at most the project's name.
        return context.names_project(token).then_some(Specific::Project);
    }
    if context.secrets.contains(token) {
        return Some(Specific::Secret);
    }
    // A possessive names its feature too ("F-007's rate-limit test").
    let owner = possessor(token).unwrap_or(token);
    if context.features.contains(owner) || looks_like_feature_id(owner, context) {
        return Some(Specific::FeatureId);
    }
    if looks_like_run_id(token) {
        return Some(Specific::RunId);
    }
    if looks_like_time(token) {
        return Some(Specific::Time);
    }
    if let Some(at) = token.find('@') {
        if at > 0 && token[at + 1..].contains('.') {
            return Some(Specific::Email);
        }
    }
    if token.contains("://") {
        return Some(Specific::Url);
    }
    // A line of a file (`test/accounts_test.exs:42`) is in a path, not at a host's port.
    let line_of_file = token.rsplit_once(':').is_some_and(|(file, line)| {
        !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()) && looks_like_path(file)
    });
    if line_of_file {
        return Some(Specific::Path);
    }
    if has_port(token) {
        return Some(Specific::HostPort);
    }
    if looks_like_host(token) {
        return Some(Specific::Host);
    }
    if looks_like_path(token) || context.is_directory(token) {
        return Some(Specific::Path);
    }
    let flag = bytes.first() == Some(&b'-');
    if !flag && (looks_like_number(token) || sets_a_number(token)) {
        return Some(Specific::Number);
    }
    if !flag && looks_like_name(token) {
        return Some(Specific::Name);
    }
    context.names_project(token).then_some(Specific::Project)
}

/// What a possessive names ("F-007's" → "F-007"), if `word` is one.
pub fn possessor(word: &str) -> Option<&str> {
    word.strip_suffix("'s").or_else(|| word.strip_suffix("’s"))
}

/// Shaped like a feature id of the mission: the letters of one of its ids (`f` of `F-001`),
/// a hyphen, digits; without ids to go by, one letter, a hyphen, digits (`utf-8` and `sha-256`
/// are not ids).
fn looks_like_feature_id(token: &str, context: &Context) -> bool {
    token.split_once('-').is_some_and(|(letters, digits)| {
        let prefix = |id: &String| id.split_once('-').is_some_and(|(p, _)| p == letters);
        let known = if context.features.is_empty() {
            letters.len() == 1
        } else {
            context.features.iter().any(prefix)
        };
        known
            && letters.bytes().all(|b| b.is_ascii_alphabetic())
            && !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
    })
}

/// `1777076234-worker-f-023` (with a suffix maybe) or `m-1777076234-1a2b3c`.
fn looks_like_run_id(token: &str) -> bool {
    let digits = token.bytes().take_while(u8::is_ascii_digit).count();
    let run = digits >= 9
        && ["-worker-", "-validator-", "-planner-", "-curator-"]
            .iter()
            .any(|role| token[digits..].starts_with(role));
    let mission = token.strip_prefix("m-").is_some_and(|rest| {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits >= 9 && rest.as_bytes().get(digits) == Some(&b'-')
    });
    run || mission
}

/// `host:port`, `:8080`, `:::3001`, `localhost:3001/api`: a colon followed by two digits or more.
fn has_port(token: &str) -> bool {
    let bytes = token.as_bytes();
    (0..bytes.len()).any(|i| {
        bytes[i] == b':'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)
            && bytes.get(i + 2).is_some_and(u8::is_ascii_digit)
            && (i == 0 || bytes[i - 1] != b':' || token[..i].bytes().all(|b| b == b':'))
    })
}

/// The top-level domains of host names.
const HOST_DOMAINS: &[&str] = &[
    "ai", "app", "cloud", "co", "com", "dev", "example", "internal", "io", "lan", "local", "net",
    "org", "test",
];
/// Those of [`HOST_DOMAINS`] that are private or for tests: a name in them is one mission's
/// even with two labels, where a public `github.com` or `crates.io` is a service any project uses.
const PRIVATE_DOMAINS: &[&str] = &["example", "internal", "lan", "local", "test"];

/// `world.openfoodfacts.net`, `api.shop.test`: labels of letters, digits and hyphens, the last
/// a domain of [`HOST_DOMAINS`]; three labels or more, or two in a private domain. File names
/// (`vite.config.ts`) end in an extension, not a domain. A multicast DNS name is one label
/// and `.local` (`printer.local`): more labels there are a file's (`cabal.project.local`) or
/// an API's (`chrome.storage.local`).
fn looks_like_host(token: &str) -> bool {
    let labels: Vec<&str> = token.split('.').collect();
    let Some(domain) = labels.last() else {
        return false;
    };
    let plain = labels.iter().all(|label| {
        label.starts_with(|c: char| c.is_ascii_alphanumeric())
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    });
    let labels_fit = match *domain {
        "local" => labels.len() == 2,
        _ => labels.len() >= 3 || (labels.len() == 2 && PRIVATE_DOMAINS.contains(domain)),
    };
    plain && HOST_DOMAINS.contains(domain) && labels_fit
}

/// A path of one project: three components or more, an absolute or explicitly relative one
/// (`./src/x`), or one ending in `/` or in a file name (`a/b.ts`). `~/…` is a tool's
/// convention, a directory and a glob (`drizzle/*.sql`, `.changeset/`) a kind of file, a
/// program in the root (`./gradlew`) a tool's wrapper, one a package manager installed
/// (`./vendor/bin/pint`) the tool's; `and/or`, `i/o`, `ci/cd` are words.
fn looks_like_path(token: &str) -> bool {
    if token.starts_with("~/") || !(token.contains('/') || token.contains('\\')) {
        return false;
    }
    // A program in the project's root: a tool's wrapper (`./gradlew`, `./mvnw`, `./manage.py`).
    if token
        .strip_prefix("./")
        .is_some_and(|rest| !rest.is_empty() && !rest.contains(['/', '\\']))
    {
        return false;
    }
    // A program a package manager installed (`./vendor/bin/pint`, `node_modules/.bin/eslint`,
    // `.venv/bin/pytest`): where every project that installs the tool has it.
    let installed = [
        "vendor/bin/",
        "node_modules/.bin/",
        ".venv/bin/",
        "venv/bin/",
    ]
    .iter()
    .any(|dir| {
        token
            .trim_start_matches("./")
            .strip_prefix(dir)
            .is_some_and(|program| !program.is_empty() && !program.contains(['/', '\\']))
    });
    if installed {
        return false;
    }
    let components: Vec<&str> = token.split(['/', '\\']).filter(|c| !c.is_empty()).collect();
    if components.is_empty() || components.iter().all(|c| c.chars().count() <= 1) {
        return false;
    }
    let last = components[components.len() - 1];
    components.len() >= 3
        || token.starts_with(['/', '\\'])
        || token.starts_with("./")
        || token.starts_with("../")
        || (components.len() == 2
            && (token.ends_with(['/', '\\']) || (last.contains('.') && !last.contains('*'))))
}

/// Three digits or more in a row, or a decimal number (`59.98`, `1.74`, `0.0.0.0`); not a
/// name that ends in digits (`sha256`, `sha-256`, `int64`).
fn looks_like_number(token: &str) -> bool {
    // A hexadecimal literal (`0xFFFF`, an id or an address) is a value as a decimal one is.
    if token
        .strip_prefix("0x")
        .is_some_and(|hex| !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return true;
    }
    let digits = |run: &str| run.bytes().all(|b| b.is_ascii_digit()) && !run.is_empty();
    let letters = token.trim_end_matches(|c: char| c.is_ascii_digit());
    let letters = letters.strip_suffix('-').unwrap_or(letters);
    if !letters.is_empty()
        && letters.len() < token.len()
        && letters.bytes().all(|b| b.is_ascii_alphabetic())
    {
        return false;
    }
    let three = token
        .split(|c: char| !c.is_ascii_digit())
        .any(|run| run.len() >= 3);
    let parts: Vec<&str> = token.split('.').collect();
    three || (parts.len() >= 2 && parts.iter().all(|p| digits(p)))
}

/// `ros_domain_id=42`: a variable set to a number of two digits or more, which the project chose
/// (a switch, `RUST_BACKTRACE=1`, is the tool's).
fn sets_a_number(token: &str) -> bool {
    token.split_once('=').is_some_and(|(name, value)| {
        !name.is_empty() && value.len() >= 2 && value.bytes().all(|b| b.is_ascii_digit())
    })
}

/// Words that stand for any value of their kind when written `file:line`, `path:line`.
const PLACEHOLDER_WORDS: &[&str] = &["col", "column", "file", "line", "path"];

/// `db:seed`: a word, one colon, a word (not `a::b`, not a URL, not `path:line`, which says
/// where in any file).
fn looks_like_name(token: &str) -> bool {
    let placeholders = |name: &str, qualifier: &str| {
        PLACEHOLDER_WORDS.contains(&name) && PLACEHOLDER_WORDS.contains(&qualifier)
    };
    token.split_once(':').is_some_and(|(name, qualifier)| {
        !placeholders(name, qualifier)
            && !name.is_empty()
            && !qualifier.is_empty()
            && !qualifier.contains(':')
            && name.starts_with(|c: char| c.is_ascii_alphabetic())
            && qualifier.starts_with(|c: char| c.is_ascii_alphabetic())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

/// A `snake_case` or `CamelCase` identifier, or a `file.ext` name (`ALL_CAPS` names are
/// environment variables, which tools define as often as projects do).
fn is_identifier(token: &str) -> bool {
    let has_lower = token.bytes().any(|b| b.is_ascii_lowercase());
    let snake = has_lower
        && token
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .any(|run| run.trim_matches('_').contains('_'));
    let camel = token
        .as_bytes()
        .windows(2)
        .any(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase())
        && !product_name(token);
    // A version's pattern (`8.0.x`: numbers, dot-separated, before the last part) is no file.
    let version =
        |stem: &str| stem.contains('.') && stem.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    let file = token.rsplit_once('.').is_some_and(|(stem, extension)| {
        !stem.is_empty()
            && !version(stem)
            && stem.starts_with(|c: char| c.is_alphanumeric() || c == '.' || c == '_')
            && (1..=5).contains(&extension.len())
            && extension.bytes().all(|b| b.is_ascii_alphabetic())
    });
    (snake || camel || file || is_constant(token)) && !token.starts_with('-')
}

/// Whether `token` is written as products are named, not as code: one word, capitalised or of
/// at most three letters, then an acronym (`PostgreSQL`, `LuaJIT`, `DuckDB`, `iOS`, `nREPL`);
/// a class of the project joins two words or more (`ParcelApiIT`).
fn product_name(token: &str) -> bool {
    let bytes = token.as_bytes();
    let acronym = bytes
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_uppercase())
        .count();
    let word = &bytes[..bytes.len() - acronym];
    let lower = |part: &[u8]| !part.is_empty() && part.iter().all(u8::is_ascii_lowercase);
    acronym >= 2
        && match word.split_first() {
            Some((first, rest)) if first.is_ascii_uppercase() => lower(rest),
            _ => lower(word) && word.len() <= 3,
        }
}

/// Whether `token` is a constant's or an environment variable's name (`REGISTRY_TOKEN`).
fn is_constant(token: &str) -> bool {
    token.trim_matches('_').contains('_')
        && token.bytes().any(|b| b.is_ascii_uppercase())
        && token
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// The last two components of a path, URL or `host:port/path` (a file under two roots is the
/// same file; `data/raw/` and `data/raw/2024.csv` share `raw`).
fn last_components(token: &str) -> &str {
    let token = token.trim_end_matches(['/', '\\']);
    let mut cut = token.len();
    for _ in 0..2 {
        match token[..cut].rfind(['/', '\\']) {
            Some(at) => cut = at,
            None => return token,
        }
    }
    &token[cut + 1..]
}

/// Irregular forms and their base forms, and words that say one thing of a process. Sorted.
const IRREGULAR: &[(&str, &str)] = &[
    ("broke", "break"),
    ("broken", "break"),
    ("built", "build"),
    ("caught", "catch"),
    ("forgot", "forget"),
    ("forgotten", "forget"),
    ("found", "find"),
    ("gave", "give"),
    ("given", "give"),
    ("held", "hold"),
    ("hung", "hang"),
    ("kept", "keep"),
    ("made", "make"),
    ("ran", "run"),
    ("return", "exit"),
    ("returned", "exit"),
    ("returns", "exit"),
    ("saw", "see"),
    ("seen", "see"),
    ("sent", "send"),
    ("shown", "show"),
    ("stuck", "hang"),
    ("taken", "take"),
    ("timeout", "hang"),
    ("took", "take"),
    ("went", "go"),
    ("written", "write"),
    ("wrote", "write"),
];

/// The base form of a common irregular past tense or participle, or the one word for words
/// that say the same of a process (`hung`, `stuck`, `timeout` → `hang`; `returns` → `exit`).
fn irregular(word: &str) -> Option<&'static str> {
    looked_up(IRREGULAR, word)
}

/// The second of the pair of `table` (sorted by its first) whose first is `word`.
fn looked_up(table: &[(&str, &'static str)], word: &str) -> Option<&'static str> {
    table
        .binary_search_by(|(form, _)| form.cmp(&word))
        .ok()
        .map(|i| table[i].1)
}

/// Stems that name one thing, and that one word. Sorted.
const SAME: &[(&str, &str)] = &[
    ("amount", "money"),
    ("cent", "money"),
    ("cost", "money"),
    ("fare", "money"),
    ("fee", "money"),
    ("pric", "money"),
];

/// The one word for stems that name one thing in a project's talk: money (`price`, `amount`,
/// `cost`, `cent`, `fee`, `fare`).
fn one_word(stem: &str) -> Option<&'static str> {
    looked_up(SAME, stem)
}

/// `2026-04-24`, `2026-04-24T10:05:12Z`, `10:05:12`, `16:40`.
fn looks_like_time(token: &str) -> bool {
    let digits = token.chars().filter(char::is_ascii_digit).count();
    let date = token.len() >= 10
        && token.as_bytes()[..4].iter().all(u8::is_ascii_digit)
        && token.as_bytes()[4] == b'-';
    let clock = token.contains(':')
        && digits >= 3
        && token
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, ':' | '.' | 'z' | 'Z'))
        && token
            .split(':')
            .next()
            .is_some_and(|hour| (1..=2).contains(&hour.len()));
    date || clock
}

/// A light English stemmer: enough that `applies`, `applied` and `applying` meet at `apply`, and
/// `databases` and `database` at `databas`.
fn stem(word: &str) -> String {
    let mut stem = word.to_string();
    let len = stem.chars().count();
    if !stem.is_ascii() || len <= 3 {
        return stem;
    }
    if len > 4 && (stem.ends_with("ies") || stem.ends_with("ied")) {
        stem.truncate(stem.len() - 3);
        stem.push('y');
    } else if len > 5 && stem.ends_with("ing") {
        stem.truncate(stem.len() - 3);
        undouble(&mut stem);
    } else if len > 4 && stem.ends_with("ed") {
        stem.truncate(stem.len() - 2);
        undouble(&mut stem);
    } else if len > 4
        && ["sses", "xes", "ches", "shes"]
            .iter()
            .any(|s| stem.ends_with(s))
    {
        stem.truncate(stem.len() - 2);
    } else if stem.ends_with('s') && !["ss", "us", "is"].iter().any(|s| stem.ends_with(s)) {
        stem.truncate(stem.len() - 1);
    }
    if stem.len() > 3 && stem.ends_with('e') {
        stem.truncate(stem.len() - 1);
    }
    stem
}

/// `runn` → `run`, `stopp` → `stop` (but `install` stays).
fn undouble(stem: &mut String) {
    let bytes = stem.as_bytes();
    let n = bytes.len();
    if n >= 2 && bytes[n - 1] == bytes[n - 2] && !b"aeioulsz".contains(&bytes[n - 1]) {
        stem.truncate(n - 1);
    }
}

/// Whether `word` (lowercase) is a content word, not one of the common words dropped.
pub fn is_content_word(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_err()
}

/// The most a word weighs (see [`weight`]).
pub const MAX_WEIGHT: u32 = 6;

/// How much a word held by `holding` of `sets` word sets weighs in a comparison: the natural
/// logarithm of how rare it is (`sets / holding`), rounded, from 1 to [`MAX_WEIGHT`]. A word in
/// every other set weighs 1; a word in one set of a hundred, 5.
pub fn weight(holding: usize, sets: usize) -> u32 {
    if holding == 0 {
        return MAX_WEIGHT;
    }
    let rarity = (sets as f64 / holding as f64).ln().round();
    (rarity.max(1.0) as u32).min(MAX_WEIGHT)
}

/// The Dice coefficient of two sorted word lists: 2·|common| / (|a| + |b|), from 0 (nothing in
/// common, or either empty) to 1 (the same words). Generic so that words numbered by a
/// [`Vocabulary`](super::join::Vocabulary) (sorted by number) compare exactly as their text.
pub fn similarity<T: Ord>(a: &[T], b: &[T]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    // With none needed, the count is always there.
    let common = common_words(a, b, [0, 0], 0).unwrap_or(0);
    dice(common, a.len() + b.len())
}

/// How many words two sorted lists share from positions `from` on, or `None` as soon as it is
/// certain that they share fewer than `needed`.
pub(crate) fn common_words<T: Ord>(
    a: &[T],
    b: &[T],
    from: [usize; 2],
    needed: usize,
) -> Option<usize> {
    let [mut i, mut j] = from;
    let mut common = 0;
    while i < a.len() && j < b.len() {
        if common + (a.len() - i).min(b.len() - j) < needed {
            return None;
        }
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    (common >= needed).then_some(common)
}

/// The Dice coefficient of sets of `total` words in all sharing `common`: the one formula, so
/// that the join's bounds round exactly as [`similarity`] does.
pub(crate) fn dice(common: usize, total: usize) -> f64 {
    2.0 * common as f64 / total as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim(a: &str, b: &str) -> f64 {
        similarity(&words(a), &words(b))
    }

    /// The tokens of `text` read as specific of one mission, of kind `wanted`.
    fn of_kind(wanted: Specific, text: &str, context: &Context) -> Vec<String> {
        analyse(text, context)
            .specifics
            .into_iter()
            .filter(|(kind, _)| *kind == wanted)
            .map(|(_, token)| token)
            .collect()
    }

    /// The tokens of `text` read as paths of one mission.
    fn paths(text: &str, context: &Context) -> Vec<String> {
        of_kind(Specific::Path, text, context)
    }

    #[test]
    fn a_directory_of_the_projects_paths_is_a_path_where_it_stands_alone() {
        let entries = [
            "a symlink compile_commands.json -> build/dev/compile_commands.json at the root",
            "tests read tests/fixtures/tiny_leaves/ (24 small JPEGs)",
        ];
        let context = Context::new("/p/tilecrush", ["F-001"]).with_directories_of(entries);
        let text = "point clang-tidy there with -p build/dev; the fixture in tests/fixtures";
        assert_eq!(paths(text, &context), ["build/dev", "tests/fixtures"]);
        // Without the paths that name them, two components could be prose or a tool's.
        assert!(paths(text, &Context::new("/p/tilecrush", ["F-001"])).is_empty());
        assert!(paths("bin/rails and/or sidekiq/testing", &context).is_empty());
    }

    #[test]
    fn a_password_a_text_gives_is_the_missions_wherever_it_stands() {
        let entries = [
            "the smoke check logs in with the password lantern-preview-7",
            "the passphrase is hunter_22 for the dev stack; the passphrase files stay local",
        ];
        let context = Context::new("/p/astrodocs", ["F-001"]).with_passwords_in(entries);
        let secrets = |text: &str| of_kind(Specific::Secret, text, &context);
        assert_eq!(
            secrets("it asked for the password (lantern-preview-7)"),
            ["lantern-preview-7"]
        );
        assert_eq!(secrets("export it: hunter_22"), ["hunter_22"]);
        // A word after it is no value ("the passphrase files").
        assert!(secrets("the passphrase files stay on the machines").is_empty());
        assert!(context.secrets.len() == 2, "{:?}", context.secrets);
    }

    #[test]
    fn two_children_of_one_directory_are_the_projects_directories() {
        let entries = [
            "configure with cmake --preset dev; the tree lands in build/dev",
            "ASan gets its own preset and build directory (build/asan)",
            "read/write access and/or a lock",
        ];
        let context = Context::new("/p/tilecrush", ["F-001"]).with_directories_of(entries);
        assert_eq!(
            paths("the tree lands in build/dev, read/write and/or", &context),
            ["build/dev"]
        );
        // One child alone could be prose or a tool's name.
        let alone = Context::new("/p/tilecrush", ["F-001"])
            .with_directories_of(entries[..1].iter().copied());
        assert!(paths("the tree lands in build/dev", &alone).is_empty());
    }

    #[test]
    fn normalises_case_punctuation_times_numbers_and_paths() {
        assert_eq!(
            words("Run `psql -f drizzle/*.sql` at 2026-04-24T10:05:12Z (3 times)!"),
            ["`-f", "drizzl", "f", "psql", "run", "sql", "tim"]
        );
        assert_eq!(
            words("/tmp/.tmpA1b2/project/src/main.rs fails"),
            words("crates/x/src/main.rs failed")
        );
        assert_eq!(words("Don't commit"), ["commit", "not"]);
        // Units say how much, as numbers do.
        assert_eq!(
            words("the install takes 14 minutes, 300 MB"),
            ["300", "install", "tak"]
        );
    }

    #[test]
    fn a_prefixed_word_is_one_word() {
        assert_eq!(words("pre-commit runs"), ["pre-commit", "run"]);
        assert!(!words("a non-null pre-commit hook").contains(&"commit".to_string()));
        // Other compounds are read as their parts, as before.
        assert_eq!(words("clang-format"), ["clang", "format"]);
        assert!(PREFIXES.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn stopwords_are_sorted_and_distinct() {
        assert!(STOPWORDS.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn folds_inflections() {
        assert_eq!(words("applies migrations"), words("applied migration"));
        assert_eq!(words("running the tests"), words("runs test"));
        assert_eq!(words("databases"), words("database"));
        assert_eq!(words("caching"), words("cache"));
    }

    #[test]
    fn paraphrases_are_alike_and_different_subjects_are_not() {
        let paraphrase = sim(
            "psql -f drizzle/*.sql applies migrations in filename order",
            "migrations are applied in filename order when you run psql -f drizzle/*.sql",
        );
        assert!(paraphrase >= 0.8, "{paraphrase}");
        let unrelated = sim(
            "use SQLite for the test database",
            "use pytest for the test suite",
        );
        assert!(unrelated < 0.4, "{unrelated}");
        assert_eq!(sim("", "anything"), 0.0);
        assert_eq!(sim("the same words", "same the words"), 1.0);
    }

    fn specifics(text: &str) -> Vec<(Specific, String)> {
        let context = Context::new("/home/me/shopfront", ["F-001", "F-014"]);
        analyse(text, &context).specifics
    }

    #[test]
    fn the_projects_name_is_in_a_token_whole_when_it_is_short() {
        let named = |project: &str, text: &str| {
            of_kind(Specific::Project, text, &Context::new(project, ["F-001"]))
        };
        assert_eq!(
            named("/p/qtqmlapp", "cmake --target appqtqmlapp"),
            ["appqtqmlapp"]
        );
        assert_eq!(
            named("/p/rover", "ros2 run rover_control"),
            ["rover_control"]
        );
        // A short name glued inside a longer word is as often a coincidence.
        assert!(named("/p/docs", "mkdocs serve held the iteration").is_empty());
        let words = read_words("mkdocs serve", &Context::new("/p/docs", ["F-001"])).words;
        assert!(words.contains(&"mkdoc".to_string()), "{words:?}");
    }

    #[test]
    fn what_belongs_to_one_mission_is_specific() {
        use Specific::*;
        let cases: &[(&str, &[(Specific, &str)])] = &[
            ("each page starts with `// F-003`", &[(FeatureId, "f-003")]),
            ("F-007's test failed again", &[(FeatureId, "f-007's")]),
            (
                "see 1777076234-worker-F-023 and m-1777076234-1a2b3c",
                &[
                    (RunId, "1777076234-worker-f-023"),
                    (RunId, "m-1777076234-1a2b3c"),
                ],
            ),
            (
                "curl -s localhost:3001/api/products | jq",
                &[(HostPort, "localhost:3001/api/products")],
            ),
            (
                "mix test test/shop/cart_test.exs:42 runs the one test",
                &[(Path, "test/shop/cart_test.exs:42")],
            ),
            (
                "EADDRINUSE :::3001 on npm run api",
                &[(HostPort, ":::3001")],
            ),
            (
                "log in as admin@shop.test with admin123",
                &[(Email, "admin@shop.test")],
            ),
            (
                "the shopfront API answers on /api/v1",
                &[(Project, "shopfront"), (Path, "/api/v1")],
            ),
            (
                "npm run db:seed loads 40 products in src/db/seed.ts",
                &[(Name, "db:seed"), (Path, "src/db/seed.ts")],
            ),
            ("mix test path:line for the test being fixed", &[]),
            (
                "prices as numeric(12,2) and a total of 59.98",
                &[(Number, "59.98")],
            ),
            (
                "slots from 08:00 to 17:00 since 2026-03-02",
                &[(Time, "08:00"), (Time, "17:00"), (Time, "2026-03-02")],
            ),
            (
                "MySQL listens on 127.0.0.1:3307 at 9:30:15.250",
                &[(HostPort, "127.0.0.1:3307"), (Time, "9:30:15.250")],
            ),
            (
                "fuser -k 5173/tcp frees data/raw/ for good",
                &[(Number, "5173/tcp"), (Path, "data/raw/")],
            ),
            (
                "the top describe(\"F-014 errors\", …) names the feature",
                &[(FeatureId, "f-014")],
            ),
            (
                "world.openfoodfacts.net and api.shop.test want a login",
                &[(Host, "world.openfoodfacts.net"), (Host, "api.shop.test")],
            ),
            (
                "ssh pi@garden.local, set in cabal.project.local and chrome.storage.local",
                &[(Email, "pi@garden.local")],
            ),
            ("mosquitto runs on garden.local", &[(Host, "garden.local")]),
            ("./scripts/seed.sh fills it", &[(Path, "./scripts/seed.sh")]),
            // A program a package manager installed is the tool's, in every project.
            (
                "./vendor/bin/pint --test, node_modules/.bin/eslint and vendor/bin/acme/seed.sh",
                &[(Path, "vendor/bin/acme/seed.sh")],
            ),
            (
                "the frame follows the company id 0xFFFF",
                &[(Number, "0xffff")],
            ),
            (
                "the simulation runs with ROS_DOMAIN_ID=42 and RUST_BACKTRACE=1",
                &[(Number, "ros_domain_id=42")],
            ),
        ];
        for (text, expected) in cases {
            let expected: Vec<(Specific, String)> =
                expected.iter().map(|(k, s)| (*k, s.to_string())).collect();
            assert_eq!(specifics(text), expected, "{text}");
        }
        // Words, tools' conventions and general values are not.
        for text in [
            "cargo test -- --nocapture shows println! output",
            "drizzle-kit writes into drizzle/ and vendor/ and ~/.dbt, psql -f drizzle/*.sql",
            "read/write and i/o and CI/CD, utf-8 and sha-256, make -j4 and --workers=1",
            "assert_cmd::Command::cargo_bin runs it; tailwind.config.js; DATABASE_URL",
            "Postgres 16 and node 18 for the 3 tests",
            "./gradlew ktlintFormat and ./manage.py migrate; a changeset in .changeset/",
            "github.com and crates.io; vite.config.ts and package.json",
        ] {
            assert_eq!(specifics(text), [], "{text}");
        }
    }

    #[test]
    fn identifiers_and_file_names_are_noted() {
        let noted = analyse(
            "assert_cmd::Command::cargo_bin and ProductDetail.tsx, not plain words",
            &Context::default(),
        )
        .identifiers;
        assert_eq!(noted, ["assert_cmd", "cargo_bin", "productdetail.tsx"]);
        // A constant's name may be one the project chose (`gh secret set REGISTRY_TOKEN`); one
        // given a value is a tool's setting.
        let constants = analyse(
            "gh secret set REGISTRY_TOKEN without --body hung; GIT_PAGER=cat, not plain CI",
            &Context::default(),
        )
        .identifiers;
        assert_eq!(constants, ["registry_token"]);
        // A product's name is no code; a class of the project, or a field, is.
        let products = analyse(
            "busted runs in LuaJIT against PostgreSQL on iOS; ParcelApiIT reads stationID",
            &Context::default(),
        )
        .identifiers;
        assert_eq!(products, ["parcelapiit", "stationid"]);
        // A flag's dotted name is its tool's option, not a file name.
        let flags = analyse(
            "pass -Dit.test=<class> or -Dspring.profiles.active=test, and --gtest_filter",
            &Context::default(),
        )
        .identifiers;
        assert_eq!(flags, ["gtest_filter"]);
        // A version's pattern is no file name; a numbered file is one.
        let versions =
            analyse("EF Core 8.0.x and 1.2.x, from 1.json", &Context::default()).identifiers;
        assert_eq!(versions, ["1.json"]);
    }

    #[test]
    fn irregular_forms_are_sorted_and_fold() {
        for table in [IRREGULAR, SAME] {
            assert!(table.windows(2).all(|pair| pair[0].0 < pair[1].0));
        }
        assert_eq!(words("ran it, it hung"), words("run it, it hangs"));
        assert_eq!(words("forgot cargo fmt"), words("forget cargo fmt"));
        // A run that timed out hung until its timeout.
        assert_eq!(
            words("the iteration timed out"),
            words("the iteration hung")
        );
        assert!(!words("timed the build").contains(&"hang".to_string()));
    }

    #[test]
    fn rare_words_weigh_more() {
        assert_eq!(weight(100, 100), 1);
        assert_eq!(weight(1, 100), 5);
        assert_eq!(weight(1, 1_000_000), MAX_WEIGHT);
        assert_eq!(weight(0, 10), MAX_WEIGHT);
    }
}
