use proptest::prelude::*;

use super::*;

/// Contexts and waiters are plain numbers here: the n-th request has context and waiter n.
type Table = PendingTable<u32, u32, u32>;

fn send(t: &mut Table, n: u32, tool: bool) {
    t.insert(format!("h{n}"), tool, Some(n), n).expect("room");
}

fn who(t: &Table) -> Option<String> {
    t.attributed().map(|(id, _)| id)
}

#[test]
fn the_fifo_head_gets_the_message_and_a_cancelled_head_means_nobody() {
    let mut t = Table::new(16);
    assert_eq!(who(&t), None);
    send(&mut t, 1, true);
    send(&mut t, 2, false);
    send(&mut t, 3, true);
    assert_eq!(who(&t).as_deref(), Some("h1"));
    // The client of h1 cancels: the process may still be running it, so not h3.
    assert!(t.forget("h1"), "a tool call is cancelled in the process");
    assert_eq!(who(&t), None);
    // h3's result proves h1 is over (retired with it).
    assert_eq!(t.answer("h3"), Answered::Waiting(3));
    assert!(!t.is_pending("h1"));
    assert!(!t.tool_call_queued());
    // A non-tool request is never attributed.
    assert!(t.is_pending("h2"));
    assert_eq!(who(&t), None);
}

#[test]
fn parked_calls_are_skipped() {
    let mut t = Table::new(16);
    send(&mut t, 1, true);
    send(&mut t, 2, true);
    assert!(matches!(t.park("h1"), Parked::Call(Some(1))));
    assert_eq!(who(&t).as_deref(), Some("h2"));
    assert!(matches!(t.park("h2"), Parked::Call(Some(2))));
    // Only parked calls queued: nobody (not even a followed task).
    assert_eq!(who(&t), None);
}

#[test]
fn with_no_call_queued_the_only_followed_task_gets_the_message() {
    let mut t = Table::new(16);
    send(&mut t, 1, true);
    assert_eq!(t.follow_task("h1", "t1", 100), Follow::Following(1));
    assert_eq!(who(&t).as_deref(), Some("h1"));
    assert_eq!(t.ctx_of("h1"), Some(1), "progress keeps reaching the call");
    send(&mut t, 2, true);
    assert_eq!(who(&t).as_deref(), Some("h2"), "a queued call comes first");
    assert_eq!(t.follow_task("h2", "t2", 200), Follow::Following(2));
    assert_eq!(who(&t), None, "two tasks: ambiguous");
    t.unfollow("t1");
    assert_eq!(who(&t).as_deref(), Some("h2"));
    assert!(matches!(t.park("h2"), Parked::Task(200)));
    // A task id in use, or empty, fails the call; a cancelled call's task is cancelled.
    send(&mut t, 3, true);
    assert_eq!(t.follow_task("h3", "t2", 300), Follow::BadTaskId(3));
    send(&mut t, 4, true);
    assert_eq!(t.follow_task("h4", "", 400), Follow::BadTaskId(4));
    send(&mut t, 5, true);
    t.forget("h5");
    assert_eq!(t.follow_task("h5", "t5", 500), Follow::NobodyWaits);
    assert!(!t.tool_call_queued(), "create_task answered h5");
}

#[test]
fn the_table_is_bounded_and_cancelled_unanswered_calls_count() {
    let mut t = Table::new(3);
    for n in 0..3 {
        send(&mut t, n, true);
        t.forget(&format!("h{n}"));
    }
    assert_eq!(t.waiting(), 0);
    assert_eq!(t.insert("h9".into(), true, None, 9), Err(Refused::Full(3)));
    assert_eq!(t.answer("h1"), Answered::Cancelled);
    assert_eq!(t.len(), 1, "h0 retired with h1");
    send(&mut t, 10, false);
    assert_eq!(t.close("gone"), vec![10]);
    assert_eq!(
        t.insert("h11".into(), false, None, 11),
        Err(Refused::Closed("gone".into()))
    );
    assert!(!t.forget("h2"), "no CancelRequest once closed");
}

/// One step of a random history.
#[derive(Debug, Clone)]
enum Op {
    Send { tool: bool },
    Forget(usize),
    Answer(usize),
    Park(usize),
    Follow(usize),
    Unfollow(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => any::<bool>().prop_map(|tool| Op::Send { tool }),
        1 => any::<usize>().prop_map(Op::Forget),
        2 => any::<usize>().prop_map(Op::Answer),
        1 => any::<usize>().prop_map(Op::Park),
        1 => any::<usize>().prop_map(Op::Follow),
        1 => any::<usize>().prop_map(Op::Unfollow),
    ]
}

/// The attribution rule, restated over a plain history of requests.
#[derive(Default)]
struct Model {
    /// Every request sent: (number, tool, cancelled, parked, gone).
    sent: Vec<(u32, bool, bool, bool, bool)>,
    /// Followed tasks: (task number, call number).
    tasks: Vec<(u32, u32)>,
}

impl Model {
    fn expected(&self) -> Option<u32> {
        let queued: Vec<_> = self.sent.iter().filter(|r| r.1 && !r.4).collect();
        match queued.iter().find(|r| !r.3) {
            Some(head) if head.2 => None,
            Some(head) => Some(head.0),
            None if queued.is_empty() && self.tasks.len() == 1 => Some(self.tasks[0].1),
            None => None,
        }
    }

    /// The process answered request `n`: it is gone, and so is every earlier tool call
    /// when it is one.
    fn answered(&mut self, n: u32) {
        let pos = self.sent.iter().position(|r| r.0 == n).expect("sent");
        let tool = self.sent[pos].1;
        for (i, r) in self.sent.iter_mut().enumerate() {
            if r.0 == n || (tool && r.1 && i < pos) {
                r.4 = true;
            }
        }
    }
}

proptest! {
    /// Whatever happens, a message without a call id goes to the first tool call the
    /// process has not finished and that was not parked (nobody if its client cancelled it),
    /// else to the only followed task, else to nobody; the table never exceeds its bound.
    #[test]
    fn attribution_follows_the_rule(ops in proptest::collection::vec(op(), 1..120)) {
        const LIMIT: usize = 24;
        let mut t = Table::new(LIMIT);
        let mut m = Model::default();
        let mut next = 0u32;
        for op in ops {
            let live: Vec<u32> = m.sent.iter().filter(|r| !r.4).map(|r| r.0).collect();
            let pick = |k: usize| live.get(k % live.len().max(1)).copied();
            match op {
                Op::Send { tool } => {
                    next += 1;
                    match t.insert(format!("h{next}"), tool, Some(next), next) {
                        Ok(()) => m.sent.push((next, tool, false, false, false)),
                        Err(e) => prop_assert_eq!(e, Refused::Full(LIMIT)),
                    }
                }
                Op::Forget(k) => if let Some(n) = pick(k) {
                    let r = m.sent.iter_mut().find(|r| r.0 == n).expect("sent");
                    prop_assert_eq!(t.forget(&format!("h{n}")), r.1);
                    if r.1 { r.2 = true } else { r.4 = true }
                },
                Op::Answer(k) => if let Some(n) = pick(k) {
                    let cancelled = m.sent.iter().any(|r| r.0 == n && (r.2 || r.3));
                    let got = t.answer(&format!("h{n}"));
                    prop_assert_eq!(got, if cancelled { Answered::Cancelled } else { Answered::Waiting(n) });
                    m.answered(n);
                },
                Op::Park(k) => if let Some(n) = pick(k) {
                    let r = m.sent.iter_mut().find(|r| r.0 == n).expect("sent");
                    let parked = matches!(t.park(&format!("h{n}")), Parked::Call(_));
                    prop_assert!(parked);
                    r.3 = true;
                },
                Op::Follow(k) => if let Some(n) = pick(k) {
                    let r = *m.sent.iter().find(|r| r.0 == n).expect("sent");
                    let got = t.follow_task(&format!("h{n}"), &format!("t{n}"), n);
                    if r.2 || r.3 {
                        prop_assert_eq!(got, Follow::NobodyWaits);
                    } else {
                        prop_assert_eq!(got, Follow::Following(n));
                        m.tasks.push((n, n));
                    }
                    m.answered(n);
                },
                Op::Unfollow(k) => if !m.tasks.is_empty() {
                    let (task, _) = m.tasks.remove(k % m.tasks.len());
                    t.unfollow(&format!("t{task}"));
                },
            }
            prop_assert_eq!(t.attributed(), m.expected().map(|n| (format!("h{n}"), n)));
            prop_assert!(t.len() <= LIMIT);
            let held = m.sent.iter().filter(|r| !r.4).count() + m.tasks.len();
            prop_assert_eq!(t.len(), held);
        }
    }
}
