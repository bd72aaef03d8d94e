//! The shell blocks of a markdown text and the marker above each, read without running
//! anything. The marker syntax is described in `tests/examples.rs`.

/// How a shell block's lines are read and run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// ```sh: a script for /bin/sh.
    Sh,
    /// ```bash: a script for bash.
    Bash,
    /// ```console: `$ command` lines, each followed by what it prints.
    Console,
    /// ```cron: a crontab.
    Cron,
    /// A fence with no language: a reader cannot tell what it is, so it needs a marker too;
    /// run, it is read as a console.
    Bare,
}

impl Lang {
    /// The shell kinds, by the fence's first word; None for a config or text block.
    fn of(word: &str) -> Option<Lang> {
        Some(match word {
            "sh" | "shell" => Lang::Sh,
            "bash" => Lang::Bash,
            "console" | "shell-session" => Lang::Console,
            "cron" | "crontab" => Lang::Cron,
            "" => Lang::Bare,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marker {
    /// `<!-- run -->`, `<!-- run: OPTIONS -->`, or `<!-- run[: OPTIONS]` + setup lines + `-->`.
    Run {
        /// `exit N[,N…]`: the statuses expected (none given: 0 for every command).
        exits: Vec<i32>,
        /// The hidden setup's lines (bash), empty for none.
        setup: String,
        /// 1-based line of the setup's first line, for messages.
        setup_line: usize,
    },
    /// `<!-- not-run: REASON -->`.
    NotRun(String),
    /// `<!-- checked: FILE TEST -->`: another test checks this block.
    Checked { file: String, test: String },
}

#[derive(Debug, Clone)]
pub struct Block {
    /// Where it is, for messages: `FILE:LINE` of the opening fence.
    pub file: String,
    pub line: usize,
    pub lang: Lang,
    /// The lines between the fences, each ending in a newline.
    pub body: String,
    pub marker: Marker,
}

impl Block {
    pub fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// What `parse` found: the marked shell blocks, and every problem as `FILE:LINE: what`.
#[derive(Debug, Default)]
pub struct Parsed {
    pub blocks: Vec<Block>,
    pub errors: Vec<String>,
}

/// An opening or closing fence: its character, its length and the info string after it.
fn fence(line: &str) -> Option<(char, usize, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let c = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = rest.chars().take_while(|x| *x == c).count();
    (n >= 3).then(|| (c, n, rest[n..].trim()))
}

/// A generated region's opening line (`<!-- doctor:begin -->`), which another test rewrites up
/// to its end line: a marker may sit just above it.
fn region_begin(line: &str) -> bool {
    line.trim()
        .strip_prefix("<!--")
        .and_then(|l| l.strip_suffix("-->"))
        .is_some_and(|inner| {
            inner.trim().strip_suffix(":begin").is_some_and(|name| {
                !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            })
        })
}

/// The HTML comment whose last line is `lines[end]`: (first line index, the text between
/// `<!--` and `-->`).
fn comment_ending_at(lines: &[&str], end: usize) -> Option<(usize, String)> {
    if !lines[end].trim_end().ends_with("-->") {
        return None;
    }
    let mut start = end;
    while !lines[start].trim_start().starts_with("<!--") {
        if start == 0 || lines[start - 1].contains("-->") || fence(lines[start - 1]).is_some() {
            return None;
        }
        start -= 1;
    }
    let text = lines[start..=end].join("\n");
    let inner = text.trim().strip_prefix("<!--")?.strip_suffix("-->")?;
    Some((start, inner.to_string()))
}

/// Does a comment's first word make it look like a marker (or a misspelt one)?
fn looks_like_marker(inner: &str) -> bool {
    let word = inner
        .trim_start()
        .split(|c: char| c == ':' || c.is_whitespace())
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    matches!(
        word.as_str(),
        "run" | "runs" | "not-run" | "not_run" | "notrun" | "no-run" | "norun" | "not" | "checked"
    )
}

/// A marker's text (between `<!--` and `-->`) as a `Marker`; `first` is the 1-based line of
/// `<!--`, for the setup's line numbers.
pub fn marker(inner: &str, first: usize) -> Result<Marker, String> {
    let (head, rest) = inner.split_once('\n').unwrap_or((inner, ""));
    let head = head.trim();
    let multiline = inner.contains('\n');
    if multiline && !inner.ends_with('\n') {
        return Err("a marker with setup lines ends with `-->` on a line of its own".into());
    }
    let no_setup = |what: &str| -> Result<(), String> {
        if multiline {
            Err(format!(
                "{what} takes no setup lines (one line: `<!-- {what}: … -->`)"
            ))
        } else {
            Ok(())
        }
    };
    if let Some(reason) = head.strip_prefix("not-run:") {
        no_setup("not-run")?;
        let reason = reason.trim();
        if reason.is_empty() {
            return Err("`not-run:` needs its reason".into());
        }
        return Ok(Marker::NotRun(reason.to_string()));
    }
    if let Some(what) = head.strip_prefix("checked:") {
        no_setup("checked")?;
        let words: Vec<&str> = what.split_whitespace().collect();
        let [file, test] = words[..] else {
            return Err(
                "`checked:` names a file and a test: `<!-- checked: tests/FILE.rs TEST -->`".into(),
            );
        };
        return Ok(Marker::Checked {
            file: file.to_string(),
            test: test.to_string(),
        });
    }
    let options = match head.strip_prefix("run") {
        Some("") => None,
        Some(o) if o.starts_with(':') => Some(o[1..].trim()),
        _ => {
            return Err(format!(
                "`{head}` is not a marker: `run`, `run: OPTIONS`, `not-run: REASON` or `checked: FILE TEST`"
            ));
        }
    };
    let exits = match options {
        None => Vec::new(),
        Some(o) => exits(o)?,
    };
    Ok(Marker::Run {
        exits,
        setup: rest.to_string(),
        setup_line: first + 1,
    })
}

/// `exit N[,N…]`, the one option `run:` takes.
fn exits(options: &str) -> Result<Vec<i32>, String> {
    let Some(codes) = options.strip_prefix("exit ") else {
        return Err(format!(
            "`run: {options}`: the option is `exit N` (or `exit N,N…`, one per command)"
        ));
    };
    codes
        .split(',')
        .map(|c| {
            c.trim()
                .parse::<i32>()
                .ok()
                .filter(|n| (0..=255).contains(n))
                .ok_or_else(|| format!("`run: {options}`: `{}` is not an exit status", c.trim()))
        })
        .collect()
}

/// Every shell block of `text` (named `file` in messages) with its marker, and the problems:
/// a shell block without a marker, a malformed marker, a marker above a block that is not a
/// shell block or above no block, a fence left open.
pub fn parse(file: &str, text: &str) -> Parsed {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Parsed::default();
    // The comments taken as a fence's marker (their first line index), and every fence's lines.
    let mut attached = Vec::new();
    let mut in_fence = vec![false; lines.len()];
    let mut i = 0;
    while i < lines.len() {
        let Some((c, n, info)) = fence(lines[i]) else {
            i += 1;
            continue;
        };
        let open = i;
        let mut close = None;
        for (j, line) in lines.iter().enumerate().skip(open + 1) {
            if let Some((c2, n2, rest)) = fence(line)
                && c2 == c
                && n2 >= n
                && rest.is_empty()
            {
                close = Some(j);
                break;
            }
        }
        let Some(close) = close else {
            out.errors
                .push(format!("{file}:{}: this fence is never closed", open + 1));
            break;
        };
        in_fence[open..=close].iter_mut().for_each(|f| *f = true);
        let word = info.split_whitespace().next().unwrap_or_default();
        let lang = Lang::of(&word.to_ascii_lowercase());
        // The marker's last line is right above the fence, or above a generated region's
        // opening line that is right above it.
        let mut above = open.checked_sub(1);
        if let Some(a) = above
            && region_begin(lines[a])
        {
            above = a.checked_sub(1);
        }
        let comment = above.and_then(|a| comment_ending_at(&lines, a));
        let at = format!("{file}:{}", open + 1);
        match (lang, comment) {
            (Some(lang), Some((start, inner))) => {
                attached.push(start);
                match marker(&inner, start + 1) {
                    Ok(marker) => out.blocks.push(Block {
                        file: file.to_string(),
                        line: open + 1,
                        lang,
                        body: lines[open + 1..close]
                            .iter()
                            .map(|l| format!("{l}\n"))
                            .collect(),
                        marker,
                    }),
                    Err(e) => out
                        .errors
                        .push(format!("{at}: the marker above this block: {e}")),
                }
            }
            (Some(_), None) => out.errors.push(format!(
                "{at}: a ```{word} block without a marker: put `<!-- run -->` (with a setup if it needs one) or `<!-- not-run: REASON -->` on the line above it{}",
                if word.is_empty() {
                    " (or give the fence a language: ```console for `$ ` lines, ```text for neither)"
                } else {
                    ""
                }
            )),
            (None, Some((start, inner))) if looks_like_marker(&inner) => {
                attached.push(start);
                out.errors.push(format!(
                    "{at}: a marker above a ```{word} block: markers are for shell blocks (sh, bash, console, cron, or a bare fence)"
                ));
            }
            (None, _) => {}
        }
        i = close + 1;
    }
    // A marker anywhere else marks nothing: a typo, or a block moved away from it.
    for (j, line) in lines.iter().enumerate() {
        if in_fence[j] || attached.contains(&j) || !line.trim_start().starts_with("<!--") {
            continue;
        }
        let inner = line.trim_start().trim_start_matches("<!--");
        if looks_like_marker(inner) {
            out.errors.push(format!(
                "{file}:{}: a marker that is not right above a shell block's opening fence",
                j + 1
            ));
        }
    }
    out
}

/// One `$ command` of a console block and the lines shown after it.
#[derive(Debug, Clone)]
pub struct Command {
    /// 1-based line of the `$` in the file.
    pub line: usize,
    /// The command as typed (continuation lines after a trailing `\` included).
    pub text: String,
    pub output: Vec<String>,
}

/// A console block's commands; Err when a line comes before the first `$ `, or none has one.
pub fn console(block: &Block) -> Result<Vec<Command>, String> {
    let mut commands: Vec<Command> = Vec::new();
    let mut continued = false;
    for (k, line) in block.body.lines().enumerate() {
        let number = block.line + 1 + k;
        if continued {
            let c = commands.last_mut().expect("a continued command");
            c.text.push('\n');
            c.text.push_str(line);
            continued = line.ends_with('\\');
        } else if let Some(cmd) = line.strip_prefix("$ ") {
            commands.push(Command {
                line: number,
                text: cmd.to_string(),
                output: Vec::new(),
            });
            continued = cmd.ends_with('\\');
        } else if let Some(c) = commands.last_mut() {
            c.output.push(line.to_string());
        } else {
            return Err(format!(
                "{}:{number}: a line before the first `$ ` command",
                block.file
            ));
        }
    }
    if commands.is_empty() {
        return Err(format!("{}: no `$ ` command to run", block.at()));
    }
    Ok(commands)
}

/// A crontab's lines, in order: its variables and its entries' commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cron {
    /// `NAME=value`: set for the entries below it.
    Env(String, String),
    /// An entry's command (after its five time fields, or one `@daily`-style field), with `%`
    /// read as cron reads it: the first unescaped one ends the command, the rest is its stdin,
    /// each further `%` a newline.
    Entry {
        line: usize,
        command: String,
        stdin: String,
    },
}

/// A crontab block's lines; Err naming a line that is neither a comment, a variable nor an
/// entry.
pub fn crontab(block: &Block) -> Result<Vec<Cron>, String> {
    let mut out = Vec::new();
    for (k, line) in block.body.lines().enumerate() {
        let number = block.line + 1 + k;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some((name, value)) = t.split_once('=')
            && variable(name.trim())
        {
            let (name, v) = (name.trim(), value.trim());
            let unquoted = ['"', '\'']
                .iter()
                .find_map(|q| v.strip_prefix(*q)?.strip_suffix(*q))
                .unwrap_or(v);
            out.push(Cron::Env(name.to_string(), unquoted.to_string()));
            continue;
        }
        let fields = if t.starts_with('@') { 1 } else { 5 };
        let mut rest = t;
        for _ in 0..fields {
            let field = rest.split_whitespace().next().unwrap_or_default();
            let time = field.starts_with('@')
                || (!field.is_empty()
                    && field
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "*/,-".contains(c)));
            if !time {
                return Err(format!(
                    "{}:{number}: not a crontab line (a comment, NAME=value, or five time fields and a command)",
                    block.file
                ));
            }
            rest = rest.trim_start()[field.len()..].trim_start();
        }
        let (command, stdin) = percent(rest);
        if command.trim().is_empty() {
            return Err(format!("{}:{number}: an entry with no command", block.file));
        }
        out.push(Cron::Entry {
            line: number,
            command,
            stdin,
        });
    }
    Ok(out)
}

/// A shell variable's name.
fn variable(name: &str) -> bool {
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

/// Cron's `%`: the command before the first unescaped one (`\%` is a `%`), and the stdin after
/// it, with every further unescaped `%` a newline.
fn percent(s: &str) -> (String, String) {
    let mut parts = vec![String::new()];
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'%') => {
                parts.last_mut().expect("a part").push('%');
                chars.next();
            }
            '%' => parts.push(String::new()),
            c => parts.last_mut().expect("a part").push(c),
        }
    }
    let command = parts.remove(0);
    let stdin = if parts.is_empty() {
        String::new()
    } else {
        format!("{}\n", parts.join("\n"))
    };
    (command, stdin)
}
