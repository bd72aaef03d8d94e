//! A printed line's shape: what a run of the same command shows the same every time. The docs'
//! examples (tests/examples) and the doctor output in docs/operating.md (tests/doctor.rs)
//! compare the documented lines with the printed ones in this form, line by line:
//!
//! 1. a hex id — a word of 6 or more characters `0-9a-f` with a digit in it, or of 8 or more —
//!    becomes `#` (run ids, tokens, commits);
//! 2. a number becomes `#`: from a digit that does not continue a word (`web-2`, `p50`, `x86_64`
//!    keep theirs), everything up to the next character that is not a letter, a digit or one of
//!    `.:,%+-`, trailing punctuation given back (`2026-12-01`, `03:00:12`, `41.3s`, `1m02s`,
//!    `65%`, `127.0.0.1:38177`, `1796321109898-0` are each one `#`) — `words` stops here;
//!    A date followed by a time (`2026-12-03 14:30:00`) is one `#` with it: whether a UTC time
//!    carries its date depends on when it is read (not today, or more than 20 h away: issue 63),
//!    so `until 16:30:00 UTC` documented and `until 2026-12-04 00:30:00 UTC` printed after
//!    22:00 are one shape;
//! 3. runs of white space become one space, and the line is trimmed (column widths) — `shape`.
//!
//! So times, dates, durations, pids, fences, ports, counts and ids may differ; every word,
//! every mark and every piece of punctuation must be the same (and with `words`, the spacing).

/// `line` in the form the examples compare: `words`, with white space collapsed.
pub fn shape(line: &str) -> String {
    words(line).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `line` with its ids and numbers made `#`, its spacing kept.
pub fn words(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_digit() && starts_number(&chars, i) {
            let mut end = i + chars[i..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || ".:,%+-".contains(**c))
                .count();
            while ".:,+-".contains(chars[end - 1]) {
                end -= 1;
            }
            // A date and the time after it: one number.
            if is_date(&chars[i..end])
                && chars.get(end) == Some(&' ')
                && chars.get(end + 1).is_some_and(char::is_ascii_digit)
            {
                let time = chars[end + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit() || **c == ':')
                    .count();
                if chars[end + 1..end + 1 + time].contains(&':') {
                    end += 1 + time;
                }
            }
            out.push('#');
            i = end;
            continue;
        }
        let word_start = i == 0 || !chars[i - 1].is_ascii_alphanumeric();
        if c.is_ascii_alphanumeric() && word_start {
            let end = i + chars[i..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric())
                .count();
            let word = &chars[i..end];
            let hex = word.iter().all(|c| matches!(c, '0'..='9' | 'a'..='f'));
            let digit = word.iter().any(char::is_ascii_digit);
            if hex && word.len() >= 6 && (digit || word.len() >= 8) {
                out.push('#');
                i = end;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Does the digit at `i` start a number, rather than continue a word (`p50`, `x86_64`, and a
/// name's `-2` as in `web-2`)?
fn starts_number(chars: &[char], i: usize) -> bool {
    let Some(&before) = i.checked_sub(1).and_then(|b| chars.get(b)) else {
        return true;
    };
    if before.is_ascii_alphanumeric() || before == '_' {
        return false;
    }
    if before == '-' {
        let word = i
            .checked_sub(2)
            .and_then(|b| chars.get(b))
            .is_some_and(|c| c.is_ascii_alphabetic());
        return !word;
    }
    true
}

/// `2026-12-03`: four digits, two, two, joined by `-`.
fn is_date(word: &[char]) -> bool {
    word.len() == 10
        && word.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == '-',
            _ => c.is_ascii_digit(),
        })
}
