//! Blocked evaluations (nomad/blocked_evals.go): a job whose evaluation
//! could not place everything waits here until capacity or a volume frees
//! up (Unblock, by computed class), and one whose plan was rejected too
//! often waits for the leader's once-a-minute UnblockFailed.

use crate::model::ids::{JobId, NodeId};
use crate::model::time::Millis;
use crate::sim::simulation::{Event, Simulation};

/// Nomad's leader re-enqueues max-plans blocked evaluations every minute.
const FAILED_EVAL_UNBLOCK_INTERVAL: Millis = Millis::from_secs(60);

impl Simulation<'_> {
    /// Capacity or a volume freed up: every blocked job gets another evaluation.
    pub(crate) fn unblock(&mut self) {
        for job in std::mem::take(&mut self.blocked) {
            self.enqueue_eval(job);
        }
    }

    /// A node changed, or an allocation on it stopped: Nomad's
    /// blocked_evals.go Unblock(class) retries every blocked job except those
    /// whose evaluation found the node's computed class ineligible (and did
    /// not escape its class).
    pub(crate) fn unblock_class(&mut self, node: NodeId) {
        let class = self.node_table.class(node) as usize;
        let blocked = std::mem::take(&mut self.blocked);
        for job in blocked {
            let skip = self
                .blocked_classes
                .get(&job)
                .is_some_and(|(escaped, classes)| !escaped && classes[class] == Some(false));
            if skip {
                self.blocked.insert(job);
            } else {
                self.enqueue_eval(job);
            }
        }
    }

    /// The evaluation gave up after its plan retries: Nomad blocks it with
    /// trigger max-plans, which the leader also retries once a minute.
    pub(crate) fn block_after_max_plans(&mut self, job: JobId) {
        self.max_plans_blocked.insert(job);
        if !self.unblock_failed_scheduled {
            self.unblock_failed_scheduled = true;
            let interval = FAILED_EVAL_UNBLOCK_INTERVAL.0;
            // The leader's ticker fires at whole minutes.
            let next = Millis((self.now().0 / interval + 1) * interval);
            self.at(next, Event::UnblockFailed);
        }
    }

    /// blocked_evals.go UnblockFailed: every max-plans blocked evaluation
    /// goes back to the broker.
    pub(crate) fn unblock_failed(&mut self) {
        self.unblock_failed_scheduled = false;
        for job in std::mem::take(&mut self.max_plans_blocked) {
            if self.blocked.remove(&job) {
                self.enqueue_eval(job);
            }
        }
    }
}
