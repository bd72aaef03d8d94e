//! The rights row: the commands dlock's own paths send, and what a user's missing ones mean.
//! ACL checks every command a script calls, as the user that runs the script: a user with
//! `+evalsha` but without `+xadd` fails at the XADD inside the release script. So the list is
//! the scripts' own calls (a unit test reads them from `store/scripts/*.lua`) and the commands
//! sent outside scripts (a unit test reads them from the Rust sources).

use super::{Mark, Row};

/// When a command is needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Always,
    /// A `/db` other than 0 in the URL.
    Db,
    /// A Redis Cluster URL.
    Cluster,
    /// Only with `--min-replicas`, which doctor cannot know: a note, never a failure.
    MinReplicas,
    /// Only where BLPOP is refused (`dlock cancel`'s listener then polls): a note while BLPOP
    /// is allowed, a failure beside a refused BLPOP.
    WithoutBlpop,
}

/// One command dlock sends, how doctor tries it harmlessly, and what fails without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    /// The command's words: ["XADD"], ["CLUSTER", "SLOTS"].
    pub cmd: &'static [&'static str],
    /// The trial's arguments after the words; `KEY` stands for the scratch key, `DB` for the
    /// URL's database. Chosen so that no trial can change anything but the scratch key.
    pub args: &'static [&'static str],
    /// Called by the scripts (tried inside one: ACL applies there too), else sent directly.
    pub in_script: bool,
    pub when: When,
    /// What fails without it.
    pub path: &'static str,
}

impl Need {
    /// The name ACL rules use: `xadd`, `cluster|slots`.
    pub fn acl(&self) -> String {
        self.cmd.join("|").to_ascii_lowercase()
    }

    /// As an operator reads it in the row: `XADD`, `CLUSTER SLOTS`.
    pub fn name(&self) -> String {
        self.cmd.join(" ")
    }

    /// The command and its trial arguments with the scratch key and database filled in.
    pub fn words(&self, key: &str, db: i64) -> Vec<String> {
        let fill = |a: &&str| match *a {
            "KEY" => key.to_string(),
            "DB" => db.to_string(),
            other => other.to_string(),
        };
        self.cmd.iter().chain(self.args).map(fill).collect()
    }
}

const fn need(
    cmd: &'static [&'static str],
    args: &'static [&'static str],
    in_script: bool,
    when: When,
    path: &'static str,
) -> Need {
    Need {
        cmd,
        args,
        in_script,
        when,
        path,
    }
}

/// SHA-1 of `return 1`: EVALSHA's trial (NOSCRIPT, or 1 where it is cached: both harmless).
const RETURN_1_SHA: &str = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";

/// Every command: first those sent directly, then, in the order the trial script runs them,
/// those the scripts call. The script's writers come first: the first one allowed creates the
/// scratch key (SET gives it a minute's TTL), the others then meet a key of another type
/// (WRONGTYPE: past the ACL check, nothing written); DEL ends it. TIME comes last: servers
/// before 5.0 refuse writes after it in a script.
pub const NEEDS: [Need; 28] = [
    need(
        &["EVALSHA"],
        &[RETURN_1_SHA, "1", "KEY"],
        false,
        When::Always,
        "every lock operation",
    ),
    need(
        &["EVAL"],
        &["return 1", "1", "KEY"],
        false,
        When::Always,
        "every lock operation where the script is not cached",
    ),
    need(
        &["BLPOP"],
        &["KEY", "0.01"],
        false,
        When::Always,
        "waiters, run --wait; and dlock cancel: a running job's holder waits for requests with it",
    ),
    need(
        &["LPOP"],
        &["KEY"],
        false,
        When::WithoutBlpop,
        "dlock cancel where BLPOP is refused: the holder polls for requests with it",
    ),
    need(
        &["SCAN"],
        &["0", "MATCH", "KEY", "COUNT", "1"],
        false,
        When::Always,
        "status and the exporter without keys",
    ),
    need(&["SELECT"], &["DB"], false, When::Db, "the URL's /db"),
    need(
        &["CLUSTER", "SLOTS"],
        &[],
        false,
        When::Cluster,
        "status on a cluster",
    ),
    need(
        &["ASKING"],
        &[],
        false,
        When::Cluster,
        "a slot in migration",
    ),
    need(
        &["WAIT"],
        &["0", "0"],
        false,
        When::MinReplicas,
        "--min-replicas",
    ),
    need(
        &["SET"],
        &["KEY", "", "PX", "60000"],
        true,
        When::Always,
        "taking a lock",
    ),
    need(&["INCR"], &["KEY"], true, When::Always, "the fencing token"),
    need(
        &["HSET"],
        &["KEY", "f", "v"],
        true,
        When::Always,
        "the holder and stats hashes",
    ),
    need(
        &["HINCRBY"],
        &["KEY", "f", "1"],
        true,
        When::Always,
        "the run counters",
    ),
    need(
        &["LPUSH"],
        &["KEY", "v"],
        true,
        When::Always,
        "waking a waiter on release",
    ),
    need(
        &["XADD"],
        &["KEY", "MAXLEN", "1", "*", "f", "v"],
        true,
        When::Always,
        "the run log, written by release; without it each run warns",
    ),
    need(
        &["PEXPIRE"],
        &["KEY", "60000"],
        true,
        When::Always,
        "renewing a lease",
    ),
    need(
        &["GET"],
        &["KEY"],
        true,
        When::Always,
        "reading a lock's token",
    ),
    need(
        &["PTTL"],
        &["KEY"],
        true,
        When::Always,
        "a lease's time left",
    ),
    need(&["HGET"], &["KEY", "f"], true, When::Always, "the stats"),
    need(&["HMGET"], &["KEY", "f"], true, When::Always, "the holder"),
    need(
        &["HGETALL"],
        &["KEY"],
        true,
        When::Always,
        "status, release --force",
    ),
    need(
        &["LTRIM"],
        &["KEY", "0", "0"],
        true,
        When::Always,
        "bounding the wake-up list",
    ),
    need(
        &["XLEN"],
        &["KEY"],
        true,
        When::Always,
        "status's recent runs",
    ),
    need(
        &["XREVRANGE"],
        &["KEY", "+", "-", "COUNT", "1"],
        true,
        When::Always,
        "history and the board",
    ),
    need(&["EXISTS"], &["KEY"], true, When::Always, "status"),
    need(&["DEL"], &["KEY"], true, When::Always, "releasing a lock"),
    need(
        &["HDEL"],
        &["KEY", "f"],
        true,
        When::Always,
        "a calendar --every (a key's period changed between a calendar and a duration)",
    ),
    need(
        &["TIME"],
        &[],
        true,
        When::Always,
        "--every windows, the server's clock",
    ),
];

/// The commands this setup needs (`db`: the URL names one other than 0).
pub fn needs(db: bool, cluster: bool) -> Vec<Need> {
    NEEDS
        .into_iter()
        .filter(|n| match n.when {
            When::Always | When::MinReplicas | When::WithoutBlpop => true,
            When::Db => db,
            When::Cluster => cluster,
        })
        .collect()
}

/// What the server said about one command for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// The user may not run it (NOPERM).
    Missing,
    /// The user may not touch keys under the prefix.
    KeyDenied,
    /// The server does not know it (renamed away, or too old).
    Absent,
    /// Could not tell, and why.
    Unknown(String),
}

/// A command's own error reply (or a script's error for it): an ACL refusal names the command
/// or the key; any other error (WRONGTYPE, NOSCRIPT, a syntax error) came after the ACL check
/// passed, so the command is allowed. Redis 7.0 and Valkey word these differently.
pub fn from_error(text: &str) -> Verdict {
    let t = text.to_ascii_lowercase();
    if t.contains("no permissions to access") || t.contains("can't access") {
        Verdict::KeyDenied
    } else if t.contains("noperm")
        || t.contains("no permissions to run")
        || t.contains("can't run this command")
    {
        Verdict::Missing
    } else if t.contains("unknown command") {
        Verdict::Absent
    } else {
        Verdict::Allowed
    }
}

/// `ACL DRYRUN`'s answer: `OK`, a sentence saying what is refused, or an error (an unknown
/// command: "Command 'x' not found").
pub fn from_dryrun(reply: Result<&str, &str>) -> Verdict {
    match reply {
        Ok("OK") => Verdict::Allowed,
        Ok(text) => match from_error(text) {
            Verdict::Allowed => Verdict::Unknown(format!("ACL DRYRUN answered {text:?}")),
            v => v,
        },
        Err(text) if text.to_ascii_lowercase().contains("not found") => Verdict::Absent,
        Err(text) => Verdict::Unknown(format!("ACL DRYRUN failed: {text}")),
    }
}

/// Each need with what the server said about it.
pub type Verdicts = Vec<(Need, Verdict)>;

/// How the verdicts were reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    DryRun,
    /// Each tried on a scratch key (ACL DRYRUN refused or unknown).
    Trial,
}

/// The rights row for `user` under `prefix`; `left` names a scratch key the trial could not
/// delete (DEL and PEXPIRE refused: the SET's one-minute TTL removes it).
pub fn rights(
    user: &str,
    prefix: &str,
    method: Method,
    verdicts: &[(Need, Verdict)],
    left: Option<&str>,
) -> Row {
    const CHECK: &str = "rights";
    let how = match method {
        Method::DryRun => "by ACL DRYRUN",
        Method::Trial => "each tried on a scratch key, deleted at once",
    };
    // LPOP is the cancel listener's fallback: needed only where BLPOP is refused.
    let blpop = verdicts
        .iter()
        .any(|(n, v)| n.cmd == ["BLPOP"] && *v == Verdict::Allowed);
    let optional =
        |n: &Need| n.when == When::MinReplicas || (n.when == When::WithoutBlpop && blpop);
    let of = |want: &dyn Fn(&Verdict) -> bool, opt: bool| -> Vec<Need> {
        verdicts
            .iter()
            .filter(|(n, v)| want(v) && optional(n) == opt)
            .map(|(n, _)| *n)
            .collect()
    };
    let missing = of(&|v| *v == Verdict::Missing, false);
    let absent = of(&|v| *v == Verdict::Absent, false);
    let keys = verdicts.iter().any(|(_, v)| *v == Verdict::KeyDenied);
    let unknown: Vec<(Need, String)> = verdicts
        .iter()
        .filter_map(|(n, v)| match v {
            Verdict::Unknown(why) => Some((*n, why.clone())),
            _ => None,
        })
        .collect();
    let optional_missing = of(&|v| matches!(v, Verdict::Missing | Verdict::Absent), true);
    let listed = |ns: &[Need]| {
        ns.iter()
            .map(|n| format!("{} ({})", n.name(), n.path))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let rule = |ns: &[Need]| {
        ns.iter()
            .map(|n| format!("+{}", n.acl()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let left = left.map_or(String::new(), |k| {
        format!("; the scratch key {k} could not be deleted (it expires within a minute)")
    });
    if !missing.is_empty() || !absent.is_empty() || keys {
        let mut found = Vec::new();
        let mut fix = Vec::new();
        if !missing.is_empty() {
            found.push(format!("lacks {}", listed(&missing)));
        }
        // Neither way to take a request: a running job of this user cannot be cancelled.
        let lpop = verdicts
            .iter()
            .any(|(n, v)| n.cmd == ["LPOP"] && *v == Verdict::Allowed);
        if missing.iter().any(|n| n.cmd == ["BLPOP"]) && !lpop {
            found.push(
                "so dlock cancel cannot stop its runs (the holder takes requests with BLPOP, or polls with LPOP)"
                    .into(),
            );
        }
        if keys {
            found.push(format!("may not touch keys under {prefix}"));
        }
        if !missing.is_empty() || keys {
            let patterns = if keys {
                format!(" ~{prefix}* ~{{{prefix}*")
            } else {
                String::new()
            };
            let plus = if missing.is_empty() {
                String::new()
            } else {
                format!(" {}", rule(&missing))
            };
            fix.push(format!("ACL SETUSER {user}{plus}{patterns}"));
        }
        if !absent.is_empty() {
            found.push(format!("the server has no {}", listed(&absent)));
            let names: Vec<String> = absent.iter().map(Need::name).collect();
            fix.push(format!(
                "a server with {} (not renamed away; Redis ≥ 6.2 or Valkey)",
                names.join(", ")
            ));
        }
        return Row::new(
            CHECK,
            Mark::Failure,
            format!("user {user} {} ({how}){left}", found.join("; ")),
        )
        .why("ACL checks every command a script calls too: a refused one makes the path that sends it fail (exit 69), docs/connecting.md: least privilege")
        .fix(fix.join("; "));
    }
    if !unknown.is_empty() {
        let names: Vec<String> = unknown
            .iter()
            .map(|(n, why)| format!("{}: {why}", n.name()))
            .collect();
        return Row::new(
            CHECK,
            Mark::Unknown,
            format!("user {user}: could not tell for {}{left}", names.join("; ")),
        )
        .why("a command the user may not run makes the path that sends it fail (exit 69)")
        .fix("run doctor once as a user allowed ACL DRYRUN (an admin), or compare the user's rules (ACL GETUSER) with the rule set in docs/connecting.md");
    }
    let n = verdicts.len() - optional_missing.len();
    // Each optional command refused: a note, and the rule that adds it with when it matters.
    let (mut notes, mut fixes) = (String::new(), Vec::new());
    for n in &optional_missing {
        let when = match n.when {
            When::MinReplicas => "if you use --min-replicas",
            _ => "for dlock cancel where BLPOP is refused",
        };
        let only = match n.when {
            When::MinReplicas => "needed only with --min-replicas",
            _ => "needed only where BLPOP is refused (dlock cancel's polling)",
        };
        notes.push_str(&format!("; {} refused: {only}", n.name()));
        fixes.push(format!("ACL SETUSER {user} +{}, {when}", n.acl()));
    }
    let row = Row::new(
        CHECK,
        Mark::Ok,
        format!("user {user} may run all {n} commands dlock sends ({how}){notes}{left}"),
    );
    if fixes.is_empty() {
        row
    } else {
        row.fix(fixes.join("; "))
    }
}

#[cfg(test)]
mod tests;
