use super::*;

#[test]
fn gzip_is_sent_only_to_a_client_that_takes_it() {
    assert!(accepts_gzip(["gzip, deflate, br, zstd"]));
    assert!(accepts_gzip(["deflate", "GZIP;q=0.5"]));
    assert!(!accepts_gzip(["deflate, br"]));
    assert!(!accepts_gzip(["gzip;q=0"]));
    assert!(!accepts_gzip(["gzip; q=0.0"]));
    assert!(!accepts_gzip([]));
    assert!(!accepts_gzip(["x-gzip-ish"]));
}
