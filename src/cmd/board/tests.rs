use super::*;

#[test]
fn query_parameters_are_decoded() {
    assert_eq!(
        param("page=2&prefix=a%20b", "prefix").as_deref(),
        Some("a b")
    );
    assert_eq!(param("page=2", "page").as_deref(), Some("2"));
    assert_eq!(param("", "page"), None);
}

/// A held slot whose holder hash had `hash`'s --also fields.
fn also_slot(also_of: Option<&str>, also: &[&str]) -> crate::store::state::SlotState {
    use crate::store::state::{Holder, SlotState};
    SlotState {
        slot: 0,
        token: "t".into(),
        ttl_ms: 1_000,
        holder: Some(Holder {
            host: "web-1".into(),
            pid: 42,
            command: "./backup.sh".into(),
            also_of: also_of.map(str::to_string),
            also: also.iter().map(|k| (*k).to_string()).collect(),
            ..Holder::default()
        }),
    }
}

#[test]
fn an_also_keys_holder_links_to_the_page_of_the_key_whose_run_holds_it() {
    let h = also_slot(Some("dlock:backup"), &[]);
    let cell = page::holder_cell(Some(&h), "dlock:", 0).into_string();
    assert!(
        cell.contains(r#"run of <a class="lock" href="/locks/backup" title="backup">backup</a>"#),
        "{cell}"
    );
    assert!(cell.contains("web-1:42"), "{cell}");
    // A plain holder has no link.
    let plain = page::holder_cell(Some(&also_slot(None, &[])), "dlock:", 0).into_string();
    assert!(
        !plain.contains("run of") && !plain.contains("href"),
        "{plain}"
    );
}

#[test]
fn a_holder_lists_its_also_keys_as_links_escaped_as_every_value() {
    let h = also_slot(None, &["dlock:db:main", "dlock:<b>\"x&"]);
    let cell = page::also_cell(&h, "dlock:").into_string();
    assert!(
        cell.contains(r#"<a class="lock" href="/locks/db%3Amain" title="db:main">db:main</a>"#),
        "{cell}"
    );
    assert!(
        cell.contains(r#"href="/locks/%3Cb%3E%22x%26" title="&lt;b&gt;&quot;x&amp;">&lt;b&gt;&quot;x&amp;</a>"#),
        "{cell}"
    );
    assert!(!cell.contains("<b>"), "{cell}");
    // An --also escaped in the link to its holder's key too.
    let x = also_slot(Some("dlock:<i>k"), &[]);
    let cell = page::holder_cell(Some(&x), "dlock:", 0).into_string();
    assert!(
        cell.contains("&lt;i&gt;k</a>") && !cell.contains("<i>"),
        "{cell}"
    );
    // Nothing for a run without --also.
    assert_eq!(
        page::also_cell(&also_slot(None, &[]), "dlock:").into_string(),
        ""
    );
}
