//! A stand-in for Nomad's HTTP API, on 127.0.0.1 inside the test: it
//! serves the fixture export's responses at the endpoints they were saved
//! from, with Nomad's headers (`X-Nomad-Index`, `X-Nomad-KnownLeader`,
//! `X-Nomad-LastContact`, `X-Nomad-NextToken`), pages lists as Nomad's
//! paginator does (`per_page`; the next token is the ID of the first entry
//! of the next page), and answers 403 "Permission denied" to a request
//! without the right `X-Nomad-Token`. Bounded: it answers at most
//! `MAX_REQUESTS` requests and stops once it has waited `LIFETIME` in all.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const TOKEN: &str = "s3cr3t-0000-4c3b-9a11-token";
const MAX_REQUESTS: usize = 500;
const LIFETIME: Duration = Duration::from_secs(120);
const POLL: Duration = Duration::from_millis(2);

/// What the server does wrong, for the bad-input tests.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    None,
    /// This path's response says a longer Content-Length than it sends.
    Truncate(&'static str),
    /// This path's response is a list larger than MAX_FILE_BYTES.
    Huge(&'static str),
    /// This path's response is HTML.
    NotJson(&'static str),
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    pub query: BTreeMap<String, String>,
    pub token: Option<String>,
}

pub struct Server {
    pub address: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

/// Starts the server on a free port of 127.0.0.1.
pub fn start(export: &Path, fault: Fault) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let export = export.to_path_buf();
    std::thread::spawn(move || {
        let (mut answered, mut idle) = (0, Duration::ZERO);
        while answered < MAX_REQUESTS && idle < LIFETIME {
            match listener.accept() {
                Ok((stream, _)) => {
                    answered += 1;
                    stream.set_nonblocking(false).unwrap();
                    let _ = answer(stream, &export, &fault, &log);
                }
                Err(_) => {
                    std::thread::sleep(POLL);
                    idle += POLL;
                }
            }
        }
    });
    Server { address, seen }
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn answer(
    stream: TcpStream,
    export: &Path,
    fault: &Fault,
    log: &Mutex<Vec<Seen>>,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let target = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut token = None;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("X-Nomad-Token")
        {
            token = Some(value.trim().to_string());
        }
    }
    let (path, query_text) = target.split_once('?').unwrap_or((&target, ""));
    let query: BTreeMap<String, String> = query_text
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(key), decode(value))
        })
        .collect();
    let path = decode(path);
    log.lock().unwrap().push(Seen {
        path: path.clone(),
        query: query.clone(),
        token: token.clone(),
    });
    let mut stream = stream;
    if token.as_deref() != Some(TOKEN) {
        return respond(
            &mut stream,
            403,
            "text/plain",
            b"Permission denied",
            None,
            None,
        );
    }
    if matches!(fault, Fault::NotJson(p) if *p == path) {
        return respond(
            &mut stream,
            200,
            "text/html",
            b"<html><body>Welcome to nginx!</body></html>",
            None,
            None,
        );
    }
    if matches!(fault, Fault::Huge(p) if *p == path) {
        let mut body = vec![b' '; 17 * 1024 * 1024];
        body[0] = b'[';
        *body.last_mut().unwrap() = b']';
        return respond(&mut stream, 200, "application/json", &body, None, None);
    }
    let Some((body, next)) = route(export, &path, &query) else {
        return respond(&mut stream, 404, "text/plain", b"not found", None, None);
    };
    let short = matches!(fault, Fault::Truncate(p) if *p == path).then_some(body.len() / 2);
    respond(
        &mut stream,
        200,
        "application/json",
        &body,
        next.as_deref(),
        short,
    )
}

fn respond(
    stream: &mut TcpStream,
    code: u16,
    content_type: &str,
    body: &[u8],
    next: Option<&str>,
    cut_at: Option<usize>,
) -> std::io::Result<()> {
    let reason = match code {
        200 => "OK",
        403 => "Forbidden",
        _ => "Not Found",
    };
    let mut head = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nX-Nomad-Index: 1042\r\nX-Nomad-KnownLeader: true\r\nX-Nomad-LastContact: 0\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(next) = next {
        head.push_str(&format!("X-Nomad-NextToken: {next}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(&body[..cut_at.unwrap_or(body.len())])?;
    stream.flush()
}

/// The saved response for an endpoint, paged, and the next page's token.
fn route(
    export: &Path,
    path: &str,
    query: &BTreeMap<String, String>,
) -> Option<(Vec<u8>, Option<String>)> {
    let q = |key: &str| query.get(key).map(String::as_str);
    let namespaced = |ok: bool| ok && matches!(q("namespace"), Some("default" | "*"));
    let list = match path {
        "/v1/nodes" if q("resources") == Some("true") => "nodes.json",
        "/v1/plugins" if q("type") == Some("csi") => "plugins.json",
        "/v1/volumes" if namespaced(q("type") == Some("csi")) => "volumes.json",
        "/v1/jobs" if namespaced(true) => "jobs.json",
        "/v1/allocations" if namespaced(true) => "allocations.json",
        _ => return detail(export, path, query),
    };
    let text = std::fs::read_to_string(export.join(list)).ok()?;
    let entries: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    let start = match q("next_token") {
        None => 0,
        Some(token) => entries.iter().position(|e| e["ID"] == token)?,
    };
    let per_page = q("per_page").map_or(entries.len(), |n| n.parse().unwrap());
    let end = (start + per_page.max(1)).min(entries.len());
    let next = entries
        .get(end)
        .map(|e| e["ID"].as_str().unwrap().to_string());
    Some((serde_json::to_vec(&entries[start..end]).unwrap(), next))
}

fn detail(
    export: &Path,
    path: &str,
    query: &BTreeMap<String, String>,
) -> Option<(Vec<u8>, Option<String>)> {
    let (dir, id, namespaced) = if let Some(id) = path.strip_prefix("/v1/node/") {
        ("node", id, false)
    } else if let Some(id) = path.strip_prefix("/v1/plugin/csi/") {
        ("plugin", id, false)
    } else if let Some(id) = path.strip_prefix("/v1/volume/csi/") {
        ("volume", id, true)
    } else if let Some(id) = path.strip_prefix("/v1/job/") {
        ("job", id, true)
    } else {
        return None;
    };
    if namespaced && query.get("namespace").map(String::as_str) != Some("default") {
        return None;
    }
    let file: PathBuf = export.join(dir).join(format!("{id}.json"));
    Some((std::fs::read(file).ok()?, None))
}
