//! The five fields of a calendar, read strictly: only the syntax every cron shares (Vixie,
//! cronie, POSIX plus steps and names), so a schedule means the same here as in the crontab it
//! came from. Other crons read more (`L`, `W`, `#`, `?`, a `+` before the day-of-week, seconds
//! and years, as croner, the search's reference in its tests, does); those are refused here,
//! with a line naming the field.

/// One field's rules: its name in messages, its range, and its names (the first name is `min`).
struct Spec {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

const SPECS: [Spec; 5] = [
    Spec {
        name: "minute",
        min: 0,
        max: 59,
        names: &[],
    },
    Spec {
        name: "hour",
        min: 0,
        max: 23,
        names: &[],
    },
    Spec {
        name: "day-of-month",
        min: 1,
        max: 31,
        names: &[],
    },
    Spec {
        name: "month",
        min: 1,
        max: 12,
        names: &MONTHS,
    },
    // 7 is Sunday too, as in every cron.
    Spec {
        name: "day-of-week",
        min: 0,
        max: 7,
        names: &DAYS,
    },
];

/// One field as read: the values it names (bit n = value n), which the search reads.
#[derive(Debug, Clone)]
pub(super) struct Field {
    pub(super) bits: u64,
    /// Exactly `*`.
    pub(super) star: bool,
    /// Begins with `*` (`*/2`), which Vixie cron counts as unrestricted for the day rule.
    pub(super) star_led: bool,
}

/// The five fields of `text` (already known to hold five), or the line naming what is wrong.
pub(super) fn read(fields: &[&str]) -> Result<[Field; 5], String> {
    let mut out: Vec<Field> = Vec::with_capacity(5);
    for (spec, text) in SPECS.iter().zip(fields) {
        out.push(field(spec, text)?);
    }
    let [min, hour, dom, month, dow] =
        <[Field; 5]>::try_from(out).map_err(|_| "a calendar takes 5 fields".to_string())?;
    Ok([min, hour, dom, month, dow])
}

fn field(spec: &Spec, text: &str) -> Result<Field, String> {
    let name = spec.name;
    let mut bits = 0u64;
    for item in text.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => (range, Some(step)),
            None => (item, None),
        };
        let step = match step {
            None => 1,
            Some(s) => match s.parse::<u32>() {
                Ok(n) if n >= 1 && s.bytes().all(|b| b.is_ascii_digit()) => n,
                _ => {
                    return Err(format!(
                        "{name} `{item}`: a step is `/` and a number from 1"
                    ));
                }
            },
        };
        let (lo, hi) = if range == "*" {
            (spec.min, spec.max)
        } else if let Some((a, b)) = range.split_once('-') {
            let (a, mut b) = (value(spec, a, item)?, value(spec, b, item)?);
            // `mon-sun`: Sunday ending a range is 7, as in every cron that reads names.
            if spec.name == "day-of-week" && b == 0 && a > 0 {
                b = 7;
            }
            if a > b {
                return Err(format!(
                    "{name} `{item}`: the range runs backwards (write it as two, `{a}-{},{}-{b}`)",
                    spec.max, spec.min
                ));
            }
            (a, b)
        } else if step != 1 {
            return Err(format!(
                "{name} `{item}`: a step goes after `*` or a range (`*/{step}`, `a-b/{step}`)"
            ));
        } else {
            let v = value(spec, range, item)?;
            (v, v)
        };
        let mut v = lo;
        while v <= hi {
            bits |= 1 << v;
            v = v.saturating_add(step);
        }
    }
    if name == "day-of-week" && bits & (1 << 7) != 0 {
        bits = (bits & !(1 << 7)) | 1;
    }
    Ok(Field {
        bits,
        star: text == "*",
        star_led: text.starts_with('*'),
    })
}

/// One number or name of a field; `item` is the list element it is part of, for the message.
fn value(spec: &Spec, text: &str, item: &str) -> Result<u32, String> {
    let name = spec.name;
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return match text.parse::<u32>() {
            Ok(v) if (spec.min..=spec.max).contains(&v) => Ok(v),
            _ => Err(format!("{name} {text}: {}-{} only", spec.min, spec.max)),
        };
    }
    if let Some(i) = spec.names.iter().position(|n| n.eq_ignore_ascii_case(text)) {
        return u32::try_from(i)
            .map(|i| i + spec.min)
            .map_err(|e| e.to_string());
    }
    let allowed = match spec.names.first().zip(spec.names.last()) {
        Some((first, last)) => format!(
            "a number {}-{} or a name {first}-{last}",
            spec.min, spec.max
        ),
        None => format!("a number {}-{}", spec.min, spec.max),
    };
    let upper = text.to_ascii_uppercase();
    let digits_then = |c: char| {
        upper
            .strip_suffix(c)
            .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_digit()))
    };
    let extension = ['#', '?', '+']
        .into_iter()
        .find(|&c| text.contains(c))
        .or_else(|| {
            ['L', 'W']
                .into_iter()
                .find(|&c| digits_then(c) || upper == "LW")
        });
    Err(match extension {
        Some(c) => format!(
            "{name} `{item}`: `{c}` is not plain cron (only numbers, names, `*`, `a-b`, `/n` steps and `,` lists); here {allowed}"
        ),
        None => format!("{name} `{item}`: {allowed}"),
    })
}

/// Days in each month at most (February 29 in leap years).
const MONTH_DAYS: [u32; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/// Whether a day-of-month restricted without a day-of-week can fall in one of the months.
pub(super) fn day_fits_a_month(dom: &Field, month: &Field) -> bool {
    (1..=12u32).any(|m| {
        month.bits & (1 << m) != 0
            && (1..=MONTH_DAYS[m as usize - 1]).any(|d| dom.bits & (1 << d) != 0)
    })
}

/// The values field `index` can name once read: its range, day-of-week's 7 read as 0.
pub(super) fn bounds(index: usize) -> (u32, u32) {
    let spec = &SPECS[index];
    (spec.min, if index == 4 { 6 } else { spec.max })
}

/// Whether a field names every value of its range (`1-31`, `*/1`, `0-6`).
pub(super) fn covers_all(f: &Field, index: usize) -> bool {
    let (min, max) = bounds(index);
    (min..=max).all(|v| f.bits & (1 << v) != 0)
}
