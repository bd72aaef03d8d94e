use super::*;

#[test]
fn a_short_stream_is_kept_whole_without_a_marker() {
    let mut k = Kept::new(1024);
    k.push(b"hello ");
    k.push(b"world");
    assert_eq!(k.bytes(), b"hello world");
    assert_eq!(k.total(), 11);
    assert_eq!(k.stream_tail(), 11);
    // Exactly SIZE bytes: still whole.
    let mut k = Kept::new(8);
    k.push(b"12345678");
    assert_eq!(k.bytes(), b"12345678");
}

#[test]
fn a_long_stream_keeps_a_quarter_from_the_start_and_the_rest_from_the_end() {
    let stream: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    // Pushed in uneven pieces, some larger than the tail.
    for pieces in [vec![1usize, 7, 3000, 5, 6987], vec![10_000], vec![2; 5000]] {
        let mut k = Kept::new(1024);
        let mut at = 0;
        for p in pieces {
            k.push(&stream[at..at + p]);
            at += p;
        }
        let mut want = stream[..256].to_vec();
        want.extend_from_slice(marker(10_000 - 1024).as_bytes());
        want.extend_from_slice(&stream[10_000 - 768..]);
        assert_eq!(k.bytes(), want);
        assert_eq!(k.total(), 10_000);
        // The stream's own end, after the marker.
        assert_eq!(k.stream_tail(), 768);
    }
}

#[test]
fn skipping_what_the_tail_cannot_keep_is_the_same_as_pushing_it() {
    let stream: Vec<u8> = (0..5000u32).map(|i| (i % 253) as u8).collect();
    let mut whole = Kept::new(1024);
    whole.push(&stream);
    let mut skipped = Kept::new(1024);
    skipped.push(&stream[..1000]);
    assert_eq!(skipped.head_room(), 0);
    // 1000 … 4232 unseen, then the last tail_cap bytes read.
    let rest = 5000 - skipped.tail_cap();
    skipped.skip((rest - 1000) as u64);
    skipped.push(&stream[rest..]);
    assert_eq!(skipped.bytes(), whole.bytes());
    assert_eq!(skipped.total(), whole.total());
}

#[test]
fn one_byte_over_size_leaves_one_out() {
    let mut k = Kept::new(8);
    k.push(b"123456789");
    assert_eq!(k.bytes(), b"12\n[dlock: 1 bytes left out]\n456789");
}
