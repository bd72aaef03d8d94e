//! Certificates for TLS tests, made with the openssl CLI: a private CA, a server certificate
//! for localhost/127.0.0.1, and a client certificate for mutual TLS.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Certs {
    _dir: tempfile::TempDir,
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl CLI");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A key and a certificate signed by the CA (or self-signed when `ca` is None).
fn issue(dir: &Path, name: &str, subject: &str, ext: &str) {
    openssl(
        dir,
        &[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            &format!("{name}.key"),
        ],
    );
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-key",
            &format!("{name}.key"),
            "-subj",
            subject,
            "-out",
            &format!("{name}.csr"),
        ],
    );
    std::fs::write(dir.join(format!("{name}.ext")), ext).unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            &format!("{name}.crt"),
            "-extfile",
            &format!("{name}.ext"),
        ],
    );
}

pub fn make() -> Certs {
    let dir = tempfile::Builder::new()
        .prefix("dlock-tls-")
        .tempdir()
        .unwrap();
    let d = dir.path();
    openssl(
        d,
        &[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            "ca.key",
        ],
    );
    openssl(
        d,
        &[
            "req",
            "-x509",
            "-new",
            "-key",
            "ca.key",
            "-subj",
            "/CN=dlock test CA",
            "-days",
            "2",
            "-out",
            "ca.crt",
        ],
    );
    issue(
        d,
        "server",
        "/CN=localhost",
        // clientAuth too: a cluster node presents it when it dials another node's bus.
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n",
    );
    issue(
        d,
        "client",
        "/CN=dlock-client",
        "extendedKeyUsage=clientAuth\n",
    );
    Certs {
        ca: d.join("ca.crt"),
        server_cert: d.join("server.crt"),
        server_key: d.join("server.key"),
        client_cert: d.join("client.crt"),
        client_key: d.join("client.key"),
        _dir: dir,
    }
}
