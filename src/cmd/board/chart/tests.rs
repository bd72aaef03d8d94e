use super::*;

#[test]
fn level_labels_a_few_pixels_apart_are_moved_apart_and_keep_their_order() {
    // p50 and p99 two px apart, the recommended TTL far above.
    let ys = [120.0, 118.0, 60.0];
    let b = label_baselines(&ys);
    assert_eq!(b[2], 57.0, "alone: just above its line");
    assert_eq!(b[0], 117.0, "the lowest: just above its line");
    assert_eq!(b[1], 117.0 - LINE, "moved up, clear of the one below");
    // Near the top: never above the plot, and still apart.
    let top = label_baselines(&[TOP + 2.0, TOP + 1.0, TOP]);
    assert_eq!(top, vec![TOP + 3.0 * LINE, TOP + 2.0 * LINE, TOP + LINE]);
}
