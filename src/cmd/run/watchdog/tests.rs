use super::*;

#[test]
fn a_socket_not_told_apart_yet_is_looked_for_again_soon_not_at_once() {
    let now = Instant::now();
    let later = now + Duration::from_secs(10);
    let mut wake = later;
    assert_eq!(watched(Watched::NotYet, now, &mut wake), None);
    assert_eq!(wake, now + FIRST_LOOK);
    let sooner = now + Duration::from_millis(5);
    let mut wake = sooner;
    assert_eq!(watched(Watched::NotYet, now, &mut wake), None);
    assert_eq!(wake, sooner, "an earlier wake-up stays");
    let mut wake = later;
    assert_eq!(watched(Watched::Never, now, &mut wake), None);
    assert_eq!(wake, later, "nothing to look for: no early wake-up");
}
