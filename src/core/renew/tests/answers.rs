//! How renew.lua's answer becomes the machine's event (`Event::answered`), for the binary's
//! watchdog and the simulation alike.

use super::super::*;

fn failure(refused: bool) -> Failure {
    Failure {
        permanent: false,
        reason: "connection refused".into(),
        sent: !refused,
        maybe_executed: !refused,
        refused,
    }
}

#[test]
fn each_answer_is_read_once_for_both_shells() {
    let sent = Instant::now();
    let also = |j: usize| (j == 2).then(|| "dlock:b".to_string());
    assert_eq!(
        Event::answered(Ok((Answer::Renewed, Some(2))), sent, also),
        Event::Renewed { sent }
    );
    assert_eq!(
        Event::answered(Ok((Answer::TakenOver, None)), sent, also),
        Event::Lost {
            taken_over: true,
            key: None
        }
    );
    // A lost --also key is named by its lock key.
    assert_eq!(
        Event::answered(Ok((Answer::Gone, Some(2))), sent, also),
        Event::Lost {
            taken_over: false,
            key: Some("dlock:b".into())
        }
    );
    assert_eq!(
        Event::answered(Err(failure(true)), sent, also),
        Event::Failed {
            reason: "connection refused".into(),
            refused: true
        }
    );
    assert_eq!(
        Event::replicas(Err(failure(false))),
        Event::Replicas(Err("connection refused".into()))
    );
    assert_eq!(Event::replicas(Ok(2)), Event::Replicas(Ok(2)));
}
