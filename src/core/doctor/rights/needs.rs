//! Every command dlock's paths send (`NEEDS`): how doctor tries each harmlessly, when it is
//! needed and what fails without it. Unit tests hold the list to the scripts' calls and the
//! Rust sources' commands (`rights/tests.rs`).

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
pub const NEEDS: [Need; 29] = [
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
        &["LREM"],
        &["KEY", "1", "v"],
        true,
        When::Always,
        "cancel taking back its own request",
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
