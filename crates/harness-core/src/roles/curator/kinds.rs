//! Alternatives: names that are one choice among others for one role, of which a project has one
//! (the key of a record: `serial`, `uuid`, `ulid`; the query layer: `sqlalchemy`, `prisma`). Two
//! decisions that name two alternatives of one kind, and neither the other's, decide the same
//! thing in other words ("tracks are keyed by a serial integer id", "tracks are identified by
//! UUIDs"). The kinds are general knowledge of the trade, not any project's: a name of one
//! project is none of them. Kinds a project often has several of (databases, data formats) are
//! none: "state lives in RocksDB" and "the counts go to a PostgreSQL table" are two things.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::OnceLock;

/// Each kind and its alternatives, lowercase, as a word of a text says them (`_` kept: a
/// name of code is one word). A name of two kinds is of neither. A kind's name is of two words:
/// the decisions are looked up by it among their words, which it must never be.
const KINDS: &[(&str, &[&str])] = &[
    (
        "record key",
        &[
            "autoincrement",
            "bigserial",
            "cuid",
            "ksuid",
            "nanoid",
            "objectid",
            "randomuuid",
            "serial",
            "ulid",
            "uuid",
        ],
    ),
    (
        "query layer",
        &[
            "activerecord",
            "diesel",
            "doctrine",
            "drizzle",
            "ecto",
            "efcore",
            "eloquent",
            "esqueleto",
            "gorm",
            "hasql",
            "hibernate",
            "jennifer",
            "jooq",
            "knex",
            "mongoose",
            "mybatis",
            "panache",
            "peewee",
            "persistent",
            "prisma",
            "seaorm",
            "sequelize",
            "sqlalchemy",
            "sqlc",
            "sqlx",
            "typeorm",
        ],
    ),
    (
        "sign in",
        &[
            "auth0",
            "authjs",
            "clerk",
            "cognito",
            "devise",
            "has_secure_password",
            "keycloak",
            "lucia",
            "nextauth",
            "passport",
            "sorcery",
        ],
    ),
    (
        "client state",
        &[
            "jotai", "mobx", "ngrx", "pinia", "recoil", "redux", "signals", "vuex", "xstate",
            "zustand",
        ],
    ),
    (
        "http client",
        &[
            "aiohttp", "axios", "httpx", "ky", "okhttp", "reqwest", "retrofit", "ureq",
        ],
    ),
    (
        "unit tests",
        &[
            "ava",
            "catch2",
            "expecto",
            "googletest",
            "gtest",
            "hspec",
            "jasmine",
            "jest",
            "junit",
            "kotest",
            "minitest",
            "mocha",
            "mstest",
            "nunit",
            "pest",
            "phpunit",
            "pytest",
            "rspec",
            "spock",
            "tasty",
            "testng",
            "unittest",
            "vitest",
            "xunit",
        ],
    ),
    (
        "browser tests",
        &[
            "cypress",
            "playwright",
            "puppeteer",
            "selenium",
            "webdriverio",
        ],
    ),
    (
        "js bundler",
        &[
            "browserify",
            "esbuild",
            "rollup",
            "rspack",
            "tsup",
            "turbopack",
            "vite",
            "webpack",
        ],
    ),
    ("js packages", &["npm", "pnpm", "yarn"]),
    (
        "python packages",
        &["conda", "pdm", "pip", "pipenv", "poetry", "rye", "uv"],
    ),
    (
        "web framework",
        &[
            "django",
            "express",
            "fastapi",
            "fastify",
            "flask",
            "hapi",
            "hono",
            "koa",
            "litestar",
            "nestjs",
            "sanic",
            "sinatra",
            "starlette",
            "tornado",
        ],
    ),
    (
        "job queue",
        &[
            "bull", "bullmq", "celery", "dramatiq", "faktory", "huey", "oban", "resque", "rq",
            "sidekiq",
        ],
    ),
    (
        "message broker",
        &[
            "kafka", "kinesis", "nats", "pulsar", "rabbitmq", "redpanda", "sns", "sqs", "zeromq",
        ],
    ),
    (
        "pretrained model",
        &[
            "bert",
            "convnext",
            "deit",
            "densenet",
            "distilbert",
            "efficientnet",
            "inception",
            "mobilenet",
            "regnet",
            "resnet",
            "resnext",
            "roberta",
            "swin",
            "vgg",
            "vit",
        ],
    ),
    (
        "reverse proxy",
        &["caddy", "envoy", "haproxy", "nginx", "traefik"],
    ),
    (
        "logging library",
        &[
            "bunyan",
            "log4j",
            "logback",
            "logrus",
            "loguru",
            "nlog",
            "pino",
            "serilog",
            "spdlog",
            "structlog",
            "winston",
            "zap",
            "zerolog",
        ],
    ),
    (
        "time library",
        &["chrono", "dayjs", "jiff", "luxon", "moment", "pendulum"],
    ),
    (
        "chart library",
        &[
            "altair",
            "bokeh",
            "chartjs",
            "d3",
            "echarts",
            "matplotlib",
            "plotly",
            "recharts",
            "seaborn",
        ],
    ),
    (
        "css styles",
        &["bootstrap", "bulma", "sass", "scss", "tailwind"],
    ),
    (
        "ui framework",
        &["angular", "preact", "react", "svelte", "vue"],
    ),
    ("data frames", &["dask", "pandas", "polars", "pyspark"]),
    (
        "password hash",
        &["argon2", "argon2id", "bcrypt", "pbkdf2", "scrypt"],
    ),
    (
        "infrastructure code",
        &[
            "ansible",
            "cloudformation",
            "opentofu",
            "pulumi",
            "terraform",
        ],
    ),
    ("object store", &["azureblob", "gcs", "minio", "r2", "s3"]),
    (
        "template engine",
        &[
            "askama",
            "blade",
            "ejs",
            "erb",
            "haml",
            "handlebars",
            "jinja",
            "jinja2",
            "liquid",
            "mustache",
            "nunjucks",
            "pug",
            "tera",
            "twig",
        ],
    ),
    (
        "mail sender",
        &["mailgun", "postmark", "sendgrid", "ses", "smtp"],
    ),
    ("module format", &["amd", "cjs", "commonjs", "esm", "umd"]),
    ("list pagination", &["cursor", "keyset", "offset"]),
];

/// Other spellings of an alternative, and the alternative. Sorted.
const SPELLINGS: &[(&str, &str)] = &[
    ("auto_increment", "autoincrement"),
    ("bigserials", "bigserial"),
    ("cuid2", "cuid"),
    ("gen_random_uuid", "uuid"),
    ("guid", "uuid"),
    ("ulids", "ulid"),
    ("uuids", "uuid"),
];

/// The alternatives `text` names, by kind (see the module documentation). A path, a flag, a
/// setting or a file's extension (`docs/esm/`, `--mm:orc`, `format=esm`, `bundle.cjs`) names a
/// file or a value, not a choice among alternatives; a dotted name is what it begins with
/// (`resnet50.a1_in1k`).
pub fn named(text: &str) -> BTreeMap<&'static str, BTreeSet<&'static str>> {
    let mut found: BTreeMap<&'static str, BTreeSet<&'static str>> = BTreeMap::new();
    let lowered = text.to_lowercase();
    for raw in lowered.split_whitespace() {
        let token = raw.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'));
        if token.contains(['/', ':', '=', '@'])
            || raw.trim_start_matches(['`', '(']).starts_with('-')
        {
            continue;
        }
        let token = token.split('.').next().unwrap_or_default();
        // `auto-increment`: two words, one name; `bigserial-keyed`: one of them.
        let parts = token.split('-').filter(|p| !p.is_empty());
        let joined = token.contains('-').then(|| token.replace('-', ""));
        for candidate in parts.chain(joined.as_deref()) {
            if let Some((kind, name)) = alternative(candidate) {
                found.entry(kind).or_default().insert(name);
            }
        }
    }
    found
}

/// Whether one of `one` and `two` (what two texts name, by [`named`]) names an alternative of a
/// kind and the other another alternative of it, and neither names the other's.
pub fn other_alternative(
    one: &BTreeMap<&'static str, BTreeSet<&'static str>>,
    two: &BTreeMap<&'static str, BTreeSet<&'static str>>,
) -> bool {
    one.iter().any(|(kind, names)| {
        two.get(kind)
            .is_some_and(|theirs| names.is_disjoint(theirs))
    })
}

/// The kind and the alternative `word` names: one of [`KINDS`], another spelling of one, or
/// one with a version after it (`uuidv7`, `resnet50`). A name of code that begins with one names
/// something else (`serial_port`, `offset_ms`).
fn alternative(word: &str) -> Option<(&'static str, &'static str)> {
    let table = table();
    if let Some(&found) = table.get(word) {
        return Some(found);
    }
    let name = word.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    if name.len() == word.len() {
        return None;
    }
    let name = name
        .strip_suffix('v')
        .filter(|name| table.contains_key(name))
        .unwrap_or(name);
    table.get(name).copied()
}

/// Each word of [`KINDS`] and [`SPELLINGS`], with its kind and alternative; a word of two kinds
/// is left out.
fn table() -> &'static HashMap<&'static str, (&'static str, &'static str)> {
    static TABLE: OnceLock<HashMap<&'static str, (&'static str, &'static str)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = HashMap::new();
        let mut twice = Vec::new();
        for (kind, names) in KINDS {
            for name in *names {
                if table.insert(*name, (*kind, *name)).is_some() {
                    twice.push(*name);
                }
            }
        }
        for name in twice {
            table.remove(name);
        }
        for (spelling, name) in SPELLINGS {
            if let Some(&found) = table.get(name) {
                table.insert(*spelling, found);
            }
        }
        table
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_spelling_names_an_alternative_and_the_tables_are_sorted() {
        for (spelling, name) in SPELLINGS {
            assert!(table().contains_key(name), "{spelling} → {name}");
        }
        assert!(SPELLINGS.windows(2).all(|w| w[0].0 < w[1].0));
        for (kind, names) in KINDS {
            assert!(names.windows(2).all(|w| w[0] < w[1]), "{kind}");
            assert!(kind.contains(' '), "{kind} could be a word");
        }
    }

    #[test]
    fn two_alternatives_of_one_kind_are_found_in_other_words() {
        let serial = named("tracks are keyed by a serial integer id, returned as \"id\"");
        let uuid =
            named("tracks are identified by UUIDs generated in Postgres (gen_random_uuid())");
        assert!(other_alternative(&serial, &uuid), "{serial:?} {uuid:?}");
        let bigint = named("every table keeps Laravel's auto-increment bigint id");
        let ulid = named("plots and bookings get ULID keys (HasUlids, char(26))");
        assert!(other_alternative(&bigint, &ulid), "{bigint:?} {ulid:?}");
        let resnet = named("the classifier is a torchvision resnet50 with ImageNet weights");
        let convnext = named("the default model is timm's ConvNeXt, tiny");
        assert!(
            other_alternative(&resnet, &convnext),
            "{resnet:?} {convnext:?}"
        );
        // Another version of one alternative is that alternative.
        let uuidv7 = named("every table's primary key is a UUIDv7");
        assert!(
            !uuidv7.is_empty() && !other_alternative(&uuid, &uuidv7),
            "{uuidv7:?}"
        );
    }

    #[test]
    fn a_text_naming_both_or_other_kinds_names_no_other_alternative() {
        let both = named("every package publishes an ESM and a CommonJS entry point");
        let one = named("the packages ship ESM only");
        assert_eq!(one.len(), 1, "{one:?}");
        assert!(!other_alternative(&one, &both), "{both:?}");
        let vitest = named("unit tests run with Vitest");
        let playwright = named("the browser tests run in Playwright");
        assert!(!vitest.is_empty() && !playwright.is_empty());
        assert!(!other_alternative(&vitest, &playwright));
        // A word that is no alternative: a project's name, an ordinary word, a name of code
        // that begins with one.
        assert!(named("the serialiser keeps rollouts in order").is_empty());
        assert!(named("serial_port and offset_ms come from the board").is_empty());
    }

    #[test]
    fn a_path_a_flag_a_setting_or_an_extension_names_no_alternative() {
        let named = named("`bundle.cjs` under docs/esm/, built with --format=esm and --mm:orc");
        assert!(named.is_empty(), "{named:?}");
    }
}
