//! The sockets libcurl holds open on this thread, as the transfers need to see them: which
//! kept-alive connection a request goes out on, whether a request is outstanding on it, and
//! whether bytes nobody asked for are waiting on it.
//!
//! HTTP/1.1 has no request ids: responses come back in the order of the requests (RFC 9112
//! §9.3), so a response a server sends unasked (a broken or hostile server, a response
//! smuggled behind another) is read as the answer to the next request on that connection,
//! and the real answer is left unread behind it. Such bytes are *surplus*: found before a
//! request goes out (`CURLOPT_PREREQFUNCTION`), or on a connection with no request
//! outstanding, they mean the connection is out of step (see `net::in_step`).
//!
//! libcurl says neither which socket a reused connection is (`CURLINFO_ACTIVESOCKET` is set
//! only once a transfer is done) nor when one is closed: this registry learns both from
//! `CURLOPT_SOCKOPTFUNCTION` and `CURLOPT_CLOSESOCKETFUNCTION`. Every socket also gets a
//! serial number, so that a socket closed and another opened with the same descriptor and
//! ports are never taken for one connection.

use std::cell::RefCell;

/// A connection's (local, remote) ports.
pub(crate) type Ports = (libc::c_int, libc::c_int);

struct Socket {
    fd: libc::c_int,
    serial: u64,
    ports: Option<Ports>,
    /// The transfer (its easy handle) whose request went out on it and whose response has
    /// not been read through.
    busy_with: Option<usize>,
}

#[derive(Default)]
struct Registry {
    sockets: Vec<Socket>,
    next_serial: u64,
    /// Serials of the connections found with bytes nobody asked for, not yet taken.
    surplus: Vec<u64>,
    /// Ports of the connections a request was kept off for surplus, not yet asked about.
    refused: Vec<Ports>,
}

thread_local! {
    static REGISTRY: RefCell<Registry> = RefCell::new(Registry::default());
}

/// libcurl made socket `fd` (from `CURLOPT_SOCKOPTFUNCTION`).
pub(crate) fn opened(fd: libc::c_int) {
    let _ = REGISTRY.try_with(|r| {
        let mut r = r.borrow_mut();
        r.sockets.retain(|s| s.fd != fd);
        r.next_serial += 1;
        let serial = r.next_serial;
        r.sockets.push(Socket {
            fd,
            serial,
            ports: None,
            busy_with: None,
        });
    });
}

/// libcurl closes socket `fd` (from `CURLOPT_CLOSESOCKETFUNCTION`).
pub(crate) fn closed(fd: libc::c_int) {
    let _ = REGISTRY.try_with(|r| r.borrow_mut().sockets.retain(|s| s.fd != fd));
}

/// What is waiting to be read on a socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Waiting {
    Nothing,
    /// Bytes: on an idle HTTP/1.1 connection, bytes nobody asked for.
    Bytes,
    /// The end of the stream, or an error: the server closed it.
    End,
}

/// Look without reading (`MSG_PEEK`) and without waiting.
fn waiting(fd: libc::c_int) -> Waiting {
    let mut byte = 0u8;
    // SAFETY: one writable byte; MSG_PEEK leaves it in the socket.
    let n = unsafe {
        libc::recv(
            fd,
            &mut byte as *mut u8 as *mut libc::c_void,
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    match n {
        1.. => Waiting::Bytes,
        0 => Waiting::End,
        _ => match std::io::Error::last_os_error().kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted => Waiting::Nothing,
            _ => Waiting::End,
        },
    }
}

/// A port of `fd`'s, local or remote.
fn port(fd: libc::c_int, peer: bool) -> Option<libc::c_int> {
    // SAFETY: a zeroed sockaddr_storage is a valid buffer of the length passed.
    let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    let p = &mut addr as *mut libc::sockaddr_storage as *mut libc::sockaddr;
    // SAFETY: `p` points to `len` writable bytes.
    let rc = unsafe {
        if peer {
            libc::getpeername(fd, p, &mut len)
        } else {
            libc::getsockname(fd, p, &mut len)
        }
    };
    if rc != 0 {
        return None;
    }
    match addr.ss_family as libc::c_int {
        // SAFETY: the family says which structure the bytes are.
        libc::AF_INET => Some(
            u16::from_be(unsafe { (*(p as *const libc::sockaddr_in)).sin_port }) as libc::c_int,
        ),
        // SAFETY: as above.
        libc::AF_INET6 => {
            Some(
                u16::from_be(unsafe { (*(p as *const libc::sockaddr_in6)).sin6_port })
                    as libc::c_int,
            )
        }
        _ => None,
    }
}

impl Registry {
    /// The open socket with these ports (a lookup costs no system call once a socket's ports
    /// are known).
    fn with_ports(&mut self, ports: Ports) -> Option<&mut Socket> {
        for s in self.sockets.iter_mut().filter(|s| s.ports.is_none()) {
            s.ports = port(s.fd, false).zip(port(s.fd, true));
        }
        self.sockets.iter_mut().find(|s| s.ports == Some(ports))
    }
}

/// The plain-http request of transfer `handle` (its easy handle) is about to go out on the
/// connection with `ports` (from `CURLOPT_PREREQFUNCTION`); `reused`: on a kept-alive
/// connection. False: do not send it, the connection has bytes waiting (surplus, noted) or
/// was closed by the server.
pub(crate) fn before_request(handle: usize, ports: Ports, reused: bool) -> bool {
    REGISTRY
        .try_with(|r| {
            let mut r = r.borrow_mut();
            let Some(s) = r.with_ports(ports) else {
                return true;
            };
            if reused {
                match waiting(s.fd) {
                    Waiting::Nothing => {}
                    Waiting::End => return false,
                    Waiting::Bytes => {
                        let serial = s.serial;
                        r.surplus.push(serial);
                        r.refused.push(ports);
                        return false;
                    }
                }
            }
            s.busy_with = Some(handle);
            true
        })
        .unwrap_or(true)
}

/// Whether a request was kept off the connection with `ports` because it had bytes nobody
/// asked for (asked once per refusal).
pub(crate) fn refused_for_surplus(ports: Ports) -> bool {
    REGISTRY
        .try_with(|r| {
            let refused = &mut r.borrow_mut().refused;
            let found = refused.iter().position(|p| *p == ports);
            found.map(|i| refused.swap_remove(i)).is_some()
        })
        .unwrap_or(false)
}

/// The response of transfer `handle` on the connection with `ports` has been read through
/// (or given up). Bytes
/// that arrive on it from now on are acknowledged at once (`TCP_QUICKACK`): a server whose
/// writes wait for the acknowledgement of the last one (Nagle's algorithm, RFC 896) would
/// otherwise hold a response left behind a stray until the next request or the delayed
/// acknowledgement (40 ms or more), out of sight of a connection seen idle.
pub(crate) fn after_response(handle: usize, ports: Ports) {
    let _ = REGISTRY.try_with(|r| {
        if let Some(s) = r.borrow_mut().with_ports(ports) {
            // Another transfer's request may have gone out on it since, in the same turn.
            if s.busy_with == Some(handle) {
                s.busy_with = None;
            }
            let on: libc::c_int = 1;
            // SAFETY: a socket this registry holds open, an int-valued option.
            unsafe {
                libc::setsockopt(
                    s.fd,
                    libc::IPPROTO_TCP,
                    libc::TCP_QUICKACK,
                    &on as *const libc::c_int as *const libc::c_void,
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
        }
    });
}

/// No request is outstanding on any socket of this thread's transfers.
pub(crate) fn none_busy() {
    let _ = REGISTRY.try_with(|r| {
        for s in &mut r.borrow_mut().sockets {
            s.busy_with = None;
        }
    });
}

/// The serial of the open connection with `ports`; None when it is closed already.
pub(crate) fn serial_of(ports: Ports) -> Option<u64> {
    REGISTRY
        .try_with(|r| r.borrow_mut().with_ports(ports).map(|s| s.serial))
        .ok()
        .flatten()
}

/// The connections found out of step since the last call.
pub(crate) fn take_surplus() -> Vec<u64> {
    REGISTRY
        .try_with(|r| std::mem::take(&mut r.borrow_mut().surplus))
        .unwrap_or_default()
}

/// Where connection `serial` stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Connection {
    /// A request is outstanding on it.
    Busy,
    /// No request outstanding; what is waiting on it, when looked at.
    Idle(Option<Waiting>),
    /// Closed.
    Gone,
}

/// Where connection `serial` stands; what is waiting on it is looked at only when `peek`.
pub(crate) fn look(serial: u64, peek: bool) -> Connection {
    REGISTRY
        .try_with(|r| {
            let r = r.borrow();
            match r.sockets.iter().find(|s| s.serial == serial) {
                None => Connection::Gone,
                Some(s) if s.busy_with.is_some() => Connection::Busy,
                Some(s) => Connection::Idle(peek.then(|| waiting(s.fd))),
            }
        })
        .unwrap_or(Connection::Gone)
}
