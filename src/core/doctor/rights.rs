//! The rights row: the commands dlock's own paths send, and what a user's missing ones mean.
//! ACL checks every command a script calls, as the user that runs the script: a user with
//! `+evalsha` but without `+xadd` fails at the XADD inside the release script. So the list is
//! the scripts' own calls (a unit test reads them from `store/scripts/*.lua`) and the commands
//! sent outside scripts (a unit test reads them from the Rust sources).

use super::{Mark, Row};

mod needs;
#[cfg(test)]
use needs::NEEDS;
pub use needs::{Need, When, needs};

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
        .why(format!("ACL checks every command a script calls too: a refused one makes the path that sends it fail (exit {}), docs/connecting.md: least privilege", crate::exit::Exit::UNAVAILABLE))
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
        .why(format!("a command the user may not run makes the path that sends it fail (exit {})", crate::exit::Exit::UNAVAILABLE))
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
