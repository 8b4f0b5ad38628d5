//! Failure modes every unattended agent meets, whatever the project and its tools: a command
//! held at a question, a server left in the foreground, a test that needed the network or read
//! the real clock, a stale build cache, a secret put where it is read. Each mission tells one in
//! its own tools' words ("cast wallet import --interactive sat waiting for a key",
//! "ansible-vault asked for the vault password and hung"); what tells a mode here is the words
//! any telling of it needs, so that two missions' failures meet, and its lesson is the general
//! wording a careful curator would keep when no mission's wording is general.

/// A failure mode: what tells it, and its lesson.
#[derive(Debug)]
pub struct Mode {
    /// Its name, as a phrase no text holds (`<no network>`).
    pub phrase: &'static str,
    /// What to do, in words that name no project and no tool of one ecosystem.
    pub lesson: &'static str,
    /// Whether a failure's words tell it.
    tells: fn(&Words<'_>) -> bool,
}

/// The failure modes, in the order they are asked: a text tells the first whose words it has.
/// (A command that waited at a question is held too, and a password it asked for is no secret
/// it exposed.)
pub const MODES: &[Mode] = &[
    Mode {
        phrase: "<held by a pager>",
        lesson: "output sent to a pager (less) waits for a key until the iteration's timeout: \
                 turn the pager off (git --no-pager, GIT_PAGER=cat, PAGER=cat)",
        tells: |w| w.held() && w.has(PAGER),
    },
    Mode {
        phrase: "<held at a question>",
        lesson: "a command that waits for a person (a question, a password, an editor, a \
                 full-screen menu) waits until the iteration's timeout: use its \
                 non-interactive flags or give the answer in advance",
        tells: |w| w.held() && (w.asked() || w.quoted_prompt()),
    },
    Mode {
        phrase: "<no network>",
        lesson: "builds and tests must not need the network, which the sandbox or CI may not \
                 have and public services rate-limit: vendor, cache or stub what they fetch",
        tells: |w| {
            w.has(NETWORK) || w.has_phrase(NETWORK_PHRASES) || (w.has(SANDBOX) && w.has(FETCHED))
        },
    },
    Mode {
        phrase: "<server in the foreground>",
        lesson: "a server or a watcher started in the foreground never returns and holds the \
                 iteration until its timeout: run a watcher's one-shot form, and start a server \
                 in the background, keep its pid and stop it when done",
        tells: |w| {
            w.held()
                && (w.has(SERVING)
                    || w.has_phrase(SERVING_PHRASES)
                    || w.has_phrase(KEPT_THE_SHELL)
                    || w.has_phrase(RUNS_ON)
                    || w.not_backgrounded()
                    || w.followed(&["never"], ENDED, 1))
        },
    },
    Mode {
        phrase: "<real clock>",
        lesson: "a test that reads the real clock or today's date fails at midnight, across a \
                 time zone or between two readings: pass the time in, or freeze it",
        tells: |w| w.has(CLOCK) || w.has_phrase(CLOCK_PHRASES) || w.reads_now(),
    },
    Mode {
        phrase: "<stale build cache>",
        lesson: "when a build keeps using something that was removed or renamed, its cache is \
                 stale: clear the tool's build cache or output directory and build again",
        tells: |w| {
            let cleared = w.has(CLEARED) || w.has_phrase(&[&["threw", "away"]]);
            (w.has(OLD) && (w.has(CACHED) || (cleared && w.has(BUILT))))
                || (w.has(CACHED) && cleared)
        },
    },
    Mode {
        phrase: "<secret exposed>",
        lesson: "keep secrets (keys, tokens, passwords) out of the repository, the logs and the \
                 command line: the environment, a keystore or the CI's secrets hold them",
        tells: |w| (w.has(SECRET) || w.has_phrase(SECRET_PHRASES)) && w.has(EXPOSED),
    },
];

/// The failure mode `text` tells, if any.
pub fn told(text: &str) -> Option<&'static Mode> {
    told_in(&Words::of(text))
}

/// The failure mode `words` (a text's, read once for all it is asked) tell, if any.
pub(super) fn told_in(words: &Words<'_>) -> Option<&'static Mode> {
    MODES.iter().find(|mode| (mode.tells)(words))
}

/// The failure mode a lesson's `words` tell, if any: only a lesson that says what went wrong
/// ("the sandbox has no network", "a foreground anvil holds the iteration forever") tells one;
/// a lesson telling what works in the mode's words ("nx e2e starts the dev server itself, waits
/// for it and stops it") is about its tool.
pub(super) fn told_by_lesson(words: &Words<'_>) -> Option<&'static Mode> {
    if words.has(WENT_WRONG) {
        told_in(words)
    } else {
        None
    }
}

/// What says that something went wrong ("no network", "never returned", "hung again").
const WENT_WRONG: &[&str] = &[
    "again", "cannot", "couldn", "fail", "failed", "fails", "forever", "never", "no", "not",
    "nothing", "without",
];

/// The mode whose lesson `text` is, if it is one (a line graduated in a mode's words).
pub fn lesson_of(text: &str) -> Option<&'static Mode> {
    let text = text.trim();
    MODES.iter().find(|mode| mode.lesson == text)
}

/// Held: the command or the iteration waited.
const HELD: &[&str] = &[
    "forever", "hang", "hanging", "hangs", "hung", "stuck", "timed", "timeout", "wait", "waited",
    "waiting", "waits",
];
const HELD_PHRASES: &[&[&str]] = &[
    &["sat", "there"],
    &["nothing", "happened"],
    &["keeps", "running"],
    &["keeps", "watching"],
    &["holds", "the", "iteration"],
    &["held", "the", "iteration"],
    &["blocks", "the", "iteration"],
    &["blocked", "the", "iteration"],
];
/// Where output waits for a key.
const PAGER: &[&str] = &["less", "pager"];
/// What did not happen to a command that was held ("never returned").
const NEVER: &[&str] = &[
    "came", "ended", "ends", "exited", "exits", "finished", "gave", "gives", "got", "returned",
    "returns", "stopped",
];
/// A question a command asked, or what else waits for a person's keys.
const ASKED: &[&str] = &[
    "answer",
    "ask",
    "asked",
    "asking",
    "asks",
    "confirm",
    "editor",
    "emacs",
    "input",
    "interactive",
    "keyboard",
    "menu",
    "nano",
    "passphrase",
    "password",
    "prompt",
    "prompted",
    "prompts",
    "question",
    "questions",
    "repl",
    "stdin",
    "typed",
    "vim",
];
/// What a command that runs until it is stopped never does on its own ("never exits").
const ENDED: &[&str] = &["ended", "ends", "exited", "exits", "returned", "returns"];
/// What serves or watches until stopped.
const SERVING: &[&str] = &[
    "attached",
    "daemon",
    "foreground",
    "serve",
    "server",
    "serving",
    "watch",
    "watcher",
    "watching",
];
/// What a watcher does ("rebuilds on every change").
const SERVING_PHRASES: &[&[&str]] = &[&["every", "change"], &["every", "save"]];
/// A command that kept the shell or the iteration: it ran on, in the foreground.
const KEPT_THE_SHELL: &[&[&str]] = &[
    &["held", "the", "shell"],
    &["holds", "the", "shell"],
    &["keeps", "the", "shell"],
    &["kept", "the", "shell"],
    &["held", "the", "terminal"],
    &["holds", "the", "terminal"],
    &["keeps", "the", "terminal"],
    &["kept", "the", "terminal"],
    &["keeps", "the", "iteration"],
    &["kept", "the", "iteration"],
];
/// Told of a command that held the iteration, what runs on until someone stops it ("Home
/// Assistant runs until stopped").
const RUNS_ON: &[&[&str]] = &[&["runs", "until"], &["running", "until"]];
/// Told of a failure, the network: what the command needed and the sandbox, CI or the machine
/// did not give ("failed offline", "there is no network in the sandbox"), or a public service
/// refused.
const NETWORK: &[&str] = &["dns", "internet", "network", "offline", "429", "enotfound"];
const NETWORK_PHRASES: &[&[&str]] = &[
    &["real", "request"],
    &["real", "endpoint"],
    &["public", "api"],
    &["public", "rpc"],
    &["external", "service"],
    &["remote", "service"],
    &["no", "such", "host"],
    &["could", "not", "resolve"],
    &["could", "not", "reach"],
    &["cannot", "reach"],
    &["not", "be", "reached"],
    &["cannot", "be", "reached"],
    &["no", "route"],
    &["too", "many", "requests"],
    &["rate", "limited"],
];
/// Where an iteration runs, cut off; and what fetches from elsewhere ("nothing can be fetched
/// in this sandbox"): together, the network a command needed and did not have.
const SANDBOX: &[&str] = &["sandbox"];
const FETCHED: &[&str] = &[
    "clone",
    "cloned",
    "download",
    "downloaded",
    "downloads",
    "fetch",
    "fetched",
    "fetches",
    "pull",
    "pulled",
    "resolve",
    "resolved",
];
/// The real clock, read where a test needed a time of its own.
const CLOCK: &[&str] = &["clock", "midnight", "today"];
const CLOCK_PHRASES: &[&[&str]] = &[
    &["current", "time"],
    &["current", "date"],
    &["system", "time"],
    &["real", "date"],
];
/// Calls that read the present, in the languages' words (lowercase).
const NOW: &[&str] = &[
    ".now(",
    ".now ",
    "now()",
    "today()",
    "timestamp()",
    "new date()",
    "utcnow",
    "utc_now",
];
/// Something a build used after it changed.
const OLD: &[&str] = &["leftover", "old", "outdated", "stale"];
/// What a build keeps.
const CACHED: &[&str] = &[
    "artifact",
    "artifacts",
    "cache",
    "cached",
    "caches",
    "compiled",
    "object",
    "objects",
    "precompiled",
];
const CLEARED: &[&str] = &[
    "clean", "cleaned", "cleared", "clearing", "deleted", "deleting", "flushed", "purged",
    "removed", "rm", "wiped",
];
const BUILT: &[&str] = &[
    "build",
    "builds",
    "rebuild",
    "rebuilds",
    "rebuilt",
    "recompile",
    "recompiled",
    "reimport",
    "reimported",
    "reimporting",
];
/// A secret.
const SECRET: &[&str] = &[
    "credential",
    "credentials",
    "password",
    "passwords",
    "secret",
    "secrets",
    "token",
    "tokens",
];
const SECRET_PHRASES: &[&[&str]] = &[
    &["private", "key"],
    &["api", "key"],
    &["signing", "key"],
    &["deploy", "key"],
    &["deployer", "key"],
    &["access", "key"],
    &["secret", "key"],
];
/// Where a secret is read by others.
const EXPOSED: &[&str] = &[
    "commit",
    "committed",
    "exposed",
    "gitignore",
    "history",
    "leaked",
    "logged",
    "logs",
    "plaintext",
    "printed",
    "pushed",
    "repository",
    "staged",
];

/// The words of a failure, as the modes read them (and a lesson, as the
/// [practices](super::practices) do): its runs of letters and digits, lowercase, a camel-case
/// name split into its words (`getCurrentTime`: get, current, time). Read in one pass into one
/// string: every failure of a large log is read.
pub struct Words<'t> {
    text: &'t str,
    lower: String,
    /// Where each word is in `lower`.
    spans: Vec<(usize, usize)>,
}

impl<'t> Words<'t> {
    /// The words of `text`.
    pub(super) fn of(text: &'t str) -> Self {
        let mut lower = String::with_capacity(text.len());
        let mut spans = Vec::new();
        let mut start = None;
        let mut previous = ' ';
        for c in text.chars() {
            let camel = previous.is_lowercase() && c.is_uppercase();
            if !c.is_alphanumeric() || camel {
                if let Some(at) = start.take() {
                    spans.push((at, lower.len()));
                }
            }
            if c.is_alphanumeric() {
                start.get_or_insert(lower.len());
                lower.extend(c.to_lowercase());
            }
            previous = c;
        }
        if let Some(at) = start {
            spans.push((at, lower.len()));
        }
        Self { text, lower, spans }
    }

    /// Its words, in order.
    fn words(&self) -> impl Iterator<Item = &str> + Clone {
        (0..self.spans.len()).map(|at| self.word(at))
    }

    /// Whether the text gives `flag` (`--fix`), as a whole token: not `--fixtures`.
    pub(super) fn names_flag(&self, flag: &str) -> bool {
        self.text.split_whitespace().any(|token| {
            let token = super::similarity::trimmed(token);
            token == flag
                || token
                    .strip_prefix(flag)
                    .is_some_and(|rest| rest.starts_with('='))
        })
    }

    /// Whether it has a word of `set`.
    pub(super) fn has(&self, set: &[&str]) -> bool {
        self.words().any(|w| set.contains(&w))
    }

    /// Whether it has a word that `is` says is one.
    pub(super) fn any(&self, is: fn(&str) -> bool) -> bool {
        self.words().any(is)
    }

    /// Whether a word of `first` is followed by one of `then` at most `within` words on, with
    /// no preposition between them ("one EUnit module", not "one worker per test").
    pub(super) fn followed(&self, first: &[&str], then: &[&str], within: usize) -> bool {
        const BETWEEN: &[&str] = &["at", "for", "in", "of", "on", "per", "with"];
        (0..self.spans.len())
            .filter(|&at| first.contains(&self.word(at)))
            .any(|at| {
                (at + 1..self.spans.len())
                    .take(within)
                    .take_while(|&next| !BETWEEN.contains(&self.word(next)))
                    .any(|next| then.contains(&self.word(next)))
            })
    }

    /// Its word at `at`.
    fn word(&self, at: usize) -> &str {
        let (from, to) = self.spans[at];
        &self.lower[from..to]
    }

    /// Whether it has one of `phrases`, its words in a row.
    pub(super) fn has_phrase(&self, phrases: &[&[&str]]) -> bool {
        phrases.iter().any(|phrase| {
            let starts = (self.spans.len() + 1).saturating_sub(phrase.len());
            (0..starts).any(|at| {
                phrase
                    .iter()
                    .enumerate()
                    .all(|(k, p)| self.word(at + k) == *p)
            })
        })
    }

    /// Whether it says a command was run without the shell's `&` or a container tool's `-d`
    /// (detach): in the foreground.
    fn not_backgrounded(&self) -> bool {
        self.text.contains("without &")
            || self.text.match_indices("without -d").any(|(at, said)| {
                let next = self.text[at + said.len()..].chars().next();
                !next.is_some_and(|c| c.is_alphanumeric() || c == '-')
            })
    }

    /// Whether a command or the iteration was held: it waited, or never returned.
    fn held(&self) -> bool {
        let mut pairs = self.words().zip(self.words().skip(1));
        self.has(HELD)
            || self.has_phrase(HELD_PHRASES)
            || self.has_phrase(KEPT_THE_SHELL)
            || pairs.any(|(first, second)| first == "never" && NEVER.contains(&second))
    }

    /// Whether something asked a person: a word of [`ASKED`], but the shell's prompt that a
    /// command never gave back ("never got its prompt back").
    fn asked(&self) -> bool {
        (0..self.spans.len()).any(|at| {
            let word = self.word(at);
            let back = at + 1 < self.spans.len() && self.word(at + 1) == "back";
            ASKED.contains(&word) && !(word == "prompt" && back)
        })
    }

    /// A question quoted as the tool printed it (`"Overwrite? [y/N]"`), or whatever quoted
    /// text a command stopped at (`stopped at "Select type of build to generate"`): its prompt.
    fn quoted_prompt(&self) -> bool {
        const QUESTION: &[&str] = &["?\"", "?'", "\"?", "? [", "? ("];
        const STOPPED_AT: &[&str] = &["stopped at \"", "sat at \"", "waited at \"", "stuck at \""];
        QUESTION
            .iter()
            .chain(STOPPED_AT)
            .any(|mark| self.text.contains(mark))
    }

    /// A call that reads the present (`Date.now()`, `datetime.now`, `Dates.today()`).
    fn reads_now(&self) -> bool {
        self.has(&["date", "now", "timestamp", "today", "utcnow"])
            && NOW
                .iter()
                .any(|call| self.text.to_lowercase().contains(call))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phrase(text: &str) -> Option<&'static str> {
        told(text).map(|mode| mode.phrase)
    }

    #[test]
    fn a_command_held_at_a_question_is_one_failure_in_any_tool() {
        for text in [
            "deno run without --allow-env stopped at \"Allow? [y/n/A]\" and waited for an answer",
            "sbt stopped at \"Project loading failed: (r)etry, (q)uit?\" and waited",
            "ansible-vault encrypt asked for the vault password and the iteration hung",
            "gh secret set sat at \"? Paste your secret\" and the iteration hung",
            "gradle init stopped at \"Select type of build to generate\" and sat there",
        ] {
            assert_eq!(phrase(text), Some("<held at a question>"), "{text}");
        }
        // An editor or a menu waits for a person too.
        for text in [
            "git merge opened the editor and the iteration hung",
            "make menuconfig opened its menu and sat there until the iteration was killed",
            "a bare ghci opened a REPL that waited on stdin until the timeout",
            "git commit without -m opened vim for the message and sat there until the timeout",
        ] {
            assert_eq!(phrase(text), Some("<held at a question>"), "{text}");
        }
        // Held, but by no question; a question, but nothing held.
        for text in [
            "the migration hung on a lock the other connection held",
            "the installer asks for a licence key; pass it with --key",
        ] {
            assert_eq!(phrase(text), None, "{text}");
        }
    }

    #[test]
    fn output_held_by_a_pager_is_one_failure_in_any_tool() {
        for text in [
            "git log -p never came back: its output went to less and waited for a key",
            "psql's \\d showed the table in a pager and the iteration hung",
        ] {
            assert_eq!(phrase(text), Some("<held by a pager>"), "{text}");
        }
        assert_eq!(phrase("git log --oneline shows less than git log -p"), None);
    }

    #[test]
    fn a_server_in_the_foreground_is_one_failure_in_any_tool() {
        for text in [
            "rails server in the foreground kept the iteration waiting until the timeout",
            "mkdocs serve to look at the page never returned",
            "tsc --watch never exited and the iteration timed out",
            "compose up stayed attached to the logs and sat there until the timeout",
            "dune test -w keeps watching the files and never gives the shell back",
            "I started morbo in the foreground and the iteration never got its prompt back",
            "(clack:clackup app :server :woo) from a script blocks forever",
            "latexmk -pvc rebuilds on every change and never exits, so the iteration timed out",
            "running the dev server in the same shell to look at the page; it holds the iteration",
            "hugo server held the iteration once more",
            "java -jar app.jar without & holds the shell until the timeout",
            "docker compose up without -d held the shell and the iteration timed out",
            "pio device monitor never exits on its own; the iteration sat there until the timeout",
            "npx wrangler dev held the terminal and the curl after it never ran",
            "plain love . from the shell: it never returns while the window is open",
            "started hass -c config; Home Assistant runs until stopped and the iteration hung",
        ] {
            assert_eq!(phrase(text), Some("<server in the foreground>"), "{text}");
        }
        // A server, held by nothing; held by a question, which comes first.
        for (text, mode) in [
            ("the server answers 502 when the upstream is down", None),
            ("the dev server reloads the page on every save", None),
            ("tar without -df waited until the timeout", None),
            (
                "the suite runs until the first failure and stops there",
                None,
            ),
            (
                "the dev server asked \"Use another port? (Y/n)\" and waited",
                Some("<held at a question>"),
            ),
        ] {
            assert_eq!(phrase(text), mode, "{text}");
        }
    }

    #[test]
    fn a_command_that_needed_the_network_is_one_failure_in_any_tool() {
        for text in [
            "go mod download failed: lookup proxy.golang.org: no such host, there is no network",
            "the batch test downloaded a sample image at test time and failed offline",
            "the suite called the public API and got 429 Too Many Requests on every other run",
            "the leaderboard test posted to the real score server and hung on CI with no network",
            "the confirmation test sent a real request to the SMS gateway and hung",
            "qlot install could not reach dist.quicklisp.org from the sandbox and failed",
            "ocicl install pulls from ghcr.io, which the sandbox cannot reach; it failed",
            "tlmgr install siunitx failed in the sandbox, no route to the CTAN mirror",
            "pack_install failed: the sandbox cannot fetch packs from the pack server",
            "cargo install flip-link failed in the sandbox: crates.io cannot be reached from it",
        ] {
            assert_eq!(phrase(text), Some("<no network>"), "{text}");
        }
        // A download that failed otherwise; a sandbox that is no network's.
        for text in [
            "the download of the sample image failed with a 404",
            "async tests each own a sandboxed connection, or the sandbox raises an ownership error",
        ] {
            assert_eq!(phrase(text), None, "{text}");
        }
    }

    #[test]
    fn a_test_that_read_the_real_clock_is_one_failure_in_any_tool() {
        for text in [
            "the invoice test used Date.now() and failed when the run crossed midnight",
            "the spec read getCurrentTime and failed across a minute boundary",
            "the slot test failed after 22:00 UTC: \"tomorrow\" came from new Date()",
            "the expiry test compared with the system time and failed when the run was slow",
        ] {
            assert_eq!(phrase(text), Some("<real clock>"), "{text}");
        }
        // "now" alone is a word of any sentence; a time zone is the code's, not the clock's; a
        // limit of requests per minute is what a test may check.
        for text in [
            "the test fails now that the fixture is gone",
            "the rate-limit spec failed: the limiter counted the retries",
            "naive local times broke at the DST change: the reminder came an hour early",
        ] {
            assert_eq!(phrase(text), None, "{text}");
        }
    }

    #[test]
    fn a_stale_build_cache_is_one_failure_in_any_tool() {
        for text in [
            "after the rename the tests still ran the old compiled module; clearing the cache fixed it",
            "the build kept linking an old object after the file was removed; a clean rebuild fixed it",
            "the new alias was unknown until the tool threw away the cached classpath",
            "CMake kept the library it had cached in CMakeCache.txt; rm -rf build fixed it",
        ] {
            assert_eq!(phrase(text), Some("<stale build cache>"), "{text}");
        }
        // Old, but no cache or build; a cache, but nothing old.
        for text in [
            "the old endpoint still answers with the v1 payload",
            "the cache key of the CI job included the lockfile's hash",
        ] {
            assert_eq!(phrase(text), None, "{text}");
        }
    }

    #[test]
    fn a_secret_put_where_it_is_read_is_one_failure_in_any_tool() {
        for text in [
            "the API key was in settings.py and got committed; it is read from the environment now",
            "a private key after --private-key on the command line ends up in the shell history",
        ] {
            assert_eq!(phrase(text), Some("<secret exposed>"), "{text}");
        }
        // A secret the command asked for holds the iteration; a token, not exposed.
        for (text, mode) in [
            (
                "gpg asked for the key's password and the commit hung",
                Some("<held at a question>"),
            ),
            ("the lexer's token for a keyword lost its span", None),
        ] {
            assert_eq!(phrase(text), mode, "{text}");
        }
    }
}
