//! The stop machine's facts as log lines: the one place that words them (text and JSON come
//! from the same call).

use crate::cli::config::RunConfig;
use crate::core::stop::Report;
use crate::log::{ms, secs};
use crate::sys::signals;
use crate::{debug, error, info, warn};

pub(super) fn report(cfg: &RunConfig, r: &Report) {
    match r {
        Report::Exited { status, ran } => debug!("exited";
            "job exited ({status}) after {}",
            secs(*ran)
        ),
        Report::Renewed {
            count,
            cap: Some(cap),
            ran,
        } => {
            info!("renewed", count = *count, cap = *cap, elapsed_ms = ms(*ran);
                "renewed {count}/{cap} (TTL {}, job running {})",
                secs(cfg.ttl),
                secs(*ran)
            )
        }
        Report::Renewed {
            count, cap: None, ..
        } => {
            debug!("renewed", count = *count; "renewed {count} (TTL {})", secs(cfg.ttl))
        }
        Report::RenewTrouble {
            reason,
            left,
            term_before,
        } => warn!("renew_failed", lease_left_ms = ms(*left);
            "renewal failed ({reason}); retrying until the lease ends in {}: the job gets SIGTERM {} before that unless Redis confirms",
            secs(*left),
            secs(*term_before)
        ),
        Report::Lost { taken_over, ran } => {
            let what = if *taken_over {
                "the key now holds another token (taken over)"
            } else {
                "the key is gone (expired, deleted, or the server lost its data)"
            };
            error!("lost", elapsed_ms = ms(*ran);
                "lease lost after {}: {what}; stopping the job now (exit 125)",
                secs(*ran)
            );
        }
        Report::CapReached {
            count,
            ran,
            term_in,
            end_in,
        } => {
            warn!("cap_reached", count = *count, elapsed_ms = ms(*ran), term_in_ms = ms(*term_in), lease_end_in_ms = ms(*end_in);
                "renewal cap reached ({count}/{count} renewals, job running {}): SIGTERM in {}, SIGKILL by the lease end in {}; if the job legitimately runs this long, raise --ttl (now {}) or --max-renewals",
                secs(*ran),
                secs(*term_in),
                secs(*end_in),
                secs(cfg.ttl)
            )
        }
        Report::StopCap {
            ran,
            renewals,
            limit,
            kill_in,
        } => error!("stopping", reason = "cap", ran_ms = ms(*ran), limit_ms = ms(*limit);
            "stopping the job: renewal cap reached (ran {}; hard limit ≈ {renewals} × {} + TTL {} = {}); SIGTERM now, SIGKILL in {} (exit 124)",
            secs(*ran),
            secs(cfg.renew_every),
            secs(cfg.ttl),
            secs(*limit),
            secs(*kill_in)
        ),
        Report::StopUnconfirmed {
            trouble,
            ran,
            left,
            kill_in,
        } => error!("stopping", reason = "unconfirmed", ran_ms = ms(*ran);
            "stopping the job: lease not confirmed ({}) and it ends in {}; SIGTERM now, SIGKILL in {} (exit 125)",
            trouble.as_deref().unwrap_or("no renewal answer"),
            secs(*left),
            secs(*kill_in)
        ),
        Report::Forwarded { signal, kill_in } => {
            info!("signal_forwarded", signal = *signal, kill_in_ms = ms(*kill_in);
                "{} forwarded to the job's process group; SIGKILL in {} if it is still running",
                signals::name(*signal),
                secs(*kill_in)
            )
        }
        Report::Escalated { signal } => info!("escalated", signal = *signal;
            "{} again: sending SIGKILL to the job",
            signals::name(*signal)
        ),
        Report::Stragglers => warn!("stragglers";
            "the job exited but processes of its group are still running; stopping them (SIGTERM, SIGKILL after --grace) before releasing"
        ),
    }
}
