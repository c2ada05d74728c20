//! Task lifecycle (Nomad's task `lifecycle` block, `kill_timeout`,
//! `shutdown_delay`): what an allocation whose tasks run in phases
//! reserves on its node, and how long its client takes to stop it. Both
//! are pure functions of the group's tasks and the release's rules
//! (`model::release::Release::task_resources`, `kills_sidecars_last`,
//! `max_kill_timeout`).

use crate::model::time::Millis;

/// When a task runs, from its `lifecycle` block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskPhase {
    /// No `lifecycle` block: a main task.
    Main,
    /// `hook = "prestart"`, not a sidecar: runs to completion before the
    /// main tasks start.
    Prestart,
    /// `hook = "prestart"`, `sidecar = true`: starts before the main tasks
    /// and runs beside them.
    PrestartSidecar,
    /// `hook = "poststart"`, not a sidecar.
    Poststart,
    /// `hook = "poststart"`, `sidecar = true`.
    PoststartSidecar,
    /// `hook = "poststop"`: runs after the main tasks have stopped.
    Poststop,
}

impl TaskPhase {
    /// From the hook and the sidecar flag (a poststop task's sidecar flag
    /// changes nothing Nomad's scheduler or client reads).
    pub fn of(hook: Option<Hook>, sidecar: bool) -> TaskPhase {
        match (hook, sidecar) {
            (None, _) => TaskPhase::Main,
            (Some(Hook::Prestart), false) => TaskPhase::Prestart,
            (Some(Hook::Prestart), true) => TaskPhase::PrestartSidecar,
            (Some(Hook::Poststart), false) => TaskPhase::Poststart,
            (Some(Hook::Poststart), true) => TaskPhase::PoststartSidecar,
            (Some(Hook::Poststop), _) => TaskPhase::Poststop,
        }
    }

    /// A sidecar task (`TaskRunner.IsSidecarTask`: any hook with
    /// `sidecar = true`; a poststop task is killed apart).
    fn is_sidecar(self) -> bool {
        matches!(
            self,
            TaskPhase::PrestartSidecar | TaskPhase::PoststartSidecar
        )
    }
}

/// A lifecycle hook, as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    Prestart,
    Poststart,
    Poststop,
}

/// How a release adds up an allocation's task resources
/// (`structs.go:AllocatedResources.Comparable`, which `AllocsFit` sums
/// for the scheduler's `BinPackIterator` and the plan applier alike).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskResourceRule {
    /// Up to 1.9.3: the prestart sidecars, plus the largest of the
    /// prestart (non-sidecar) tasks, the main tasks and the poststop tasks,
    /// per dimension; a poststart task is not counted at all (its hook
    /// falls through the `if`s).
    SidecarsPlusLargestPhase,
    /// From 1.9.4 (#24304): the largest, per dimension, of the prestart
    /// phase (prestart tasks and sidecars), the main phase (main tasks,
    /// prestart sidecars, poststart tasks) and the poststop phase.
    LargestPhase,
}

/// CPU (MHz) and memory (MiB).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    pub cpu: u64,
    pub memory: u64,
}

impl Resources {
    fn plus(self, other: Resources) -> Resources {
        Resources {
            cpu: self.cpu.saturating_add(other.cpu),
            memory: self.memory.saturating_add(other.memory),
        }
    }

    /// Per dimension, as `AllocatedTaskResources.Max`.
    fn max(self, other: Resources) -> Resources {
        Resources {
            cpu: self.cpu.max(other.cpu),
            memory: self.memory.max(other.memory),
        }
    }
}

/// One task of a group whose tasks are not all plain main tasks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskLifecycle {
    pub phase: TaskPhase,
    pub resources: Resources,
    /// The task's `shutdown_delay` (default 0s).
    pub shutdown_delay: Millis,
    /// The task's `kill_timeout` as written; none: plansim takes the task
    /// to exit at its kill signal (see [`GroupLifecycle::stop_time`]).
    pub kill_timeout: Option<Millis>,
    /// The task's `run_for` (a prestart or poststop task without one exits
    /// at once; a main one without one runs until stopped).
    pub run_for: Option<Millis>,
    /// The task runs a CSI plugin (its `csi_plugin` is in the group's
    /// `csi_plugins`, in task order): what the scenario writer needs.
    pub csi_plugin: bool,
}

/// What the model keeps of a group's tasks when any has a lifecycle, a
/// kill timeout or a shutdown delay, or the group has a shutdown delay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupLifecycle {
    /// Every task, main ones included, in file order.
    pub tasks: Vec<TaskLifecycle>,
    /// The group's `shutdown_delay` (default 0s).
    pub shutdown_delay: Millis,
}

/// Nomad's default `kill_timeout` (`structs.DefaultKillTimeout`).
pub const DEFAULT_KILL_TIMEOUT: Millis = Millis::from_secs(5);

impl GroupLifecycle {
    /// What one allocation reserves. `main` is the main tasks' total (the
    /// group's `cpu`/`memory`, which an `update_job` override replaces);
    /// the other phases come from the tasks.
    pub fn ask(&self, main: Resources, rule: TaskResourceRule) -> Resources {
        let sum = |phases: &[TaskPhase]| {
            self.tasks
                .iter()
                .filter(|t| phases.contains(&t.phase))
                .fold(Resources::default(), |acc, t| acc.plus(t.resources))
        };
        let prestart = sum(&[TaskPhase::Prestart]);
        let sidecars = sum(&[TaskPhase::PrestartSidecar]);
        let poststart = sum(&[TaskPhase::Poststart, TaskPhase::PoststartSidecar]);
        let poststop = sum(&[TaskPhase::Poststop]);
        match rule {
            TaskResourceRule::SidecarsPlusLargestPhase => {
                sidecars.plus(prestart.max(main).max(poststop))
            }
            TaskResourceRule::LargestPhase => prestart
                .plus(sidecars)
                .max(main.plus(sidecars).plus(poststart))
                .max(poststop),
        }
    }

    /// How long the client takes from the stop of a running allocation to
    /// its CSI hook's Postrun (which releases the claims): the group's
    /// shutdown delay (`group_service_hook.go` PreKill), then each task's
    /// own shutdown delay and its exit after the kill signal
    /// (`task_runner.go:Kill`, `killTask`), the main tasks together and,
    /// when `kills_sidecars_last`, the sidecars after them
    /// (`alloc_runner.go:killTasks`), then the poststop tasks' run
    /// (`alloc_runner.go` runs them once the others are dead). A prestart
    /// task that is not a sidecar has exited already.
    ///
    /// A task's exit after its signal is modelled as the whole of its
    /// `kill_timeout` when it sets one (capped at the client's
    /// `max_kill_timeout` where the release enforces it), the worst case
    /// the field allows and the reason to set it; a task that sets none
    /// exits at its signal (plansim's stop timing before this field).
    pub fn stop_time(&self, kills_sidecars_last: bool, max_kill_timeout: Option<Millis>) -> Millis {
        let poststop = self
            .tasks
            .iter()
            .filter(|t| t.phase == TaskPhase::Poststop)
            .map(|t| t.run_for.unwrap_or(Millis::ZERO))
            .max()
            .unwrap_or(Millis::ZERO);
        self.kill_time(kills_sidecars_last, max_kill_timeout) + poststop
    }

    /// [`GroupLifecycle::stop_time`] without the poststop tasks' run: the
    /// group's shutdown delay and the kills. A client that stops an
    /// allocation for exceeding its `max_run_duration` kills the poststop
    /// tasks before they start (`alloc_runner.go:killTasks`, v2.0.5).
    pub fn kill_time(&self, kills_sidecars_last: bool, max_kill_timeout: Option<Millis>) -> Millis {
        let exit = |t: &TaskLifecycle| {
            let kill = t.kill_timeout.map_or(Millis::ZERO, |k| {
                max_kill_timeout.map_or(k, |cap| k.min(cap))
            });
            t.shutdown_delay + kill
        };
        let longest = |pick: &dyn Fn(TaskPhase) -> bool| {
            self.tasks
                .iter()
                .filter(|t| pick(t.phase))
                .map(exit)
                .max()
                .unwrap_or(Millis::ZERO)
        };
        let killed = |p: TaskPhase| !matches!(p, TaskPhase::Prestart | TaskPhase::Poststop);
        let kills = if kills_sidecars_last {
            longest(&|p| killed(p) && !p.is_sidecar()) + longest(&|p| p.is_sidecar())
        } else {
            longest(&killed)
        };
        self.shutdown_delay + kills
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(phase: TaskPhase, cpu: u64, memory: u64) -> TaskLifecycle {
        TaskLifecycle {
            phase,
            resources: Resources { cpu, memory },
            shutdown_delay: Millis::ZERO,
            kill_timeout: None,
            run_for: None,
            csi_plugin: false,
        }
    }

    fn group(tasks: Vec<TaskLifecycle>) -> GroupLifecycle {
        GroupLifecycle {
            tasks,
            shutdown_delay: Millis::ZERO,
        }
    }

    const OLD: TaskResourceRule = TaskResourceRule::SidecarsPlusLargestPhase;
    const NEW: TaskResourceRule = TaskResourceRule::LargestPhase;

    #[test]
    fn a_prestart_task_counts_only_when_larger_than_main() {
        // The Jenkins job: main 1000 MHz, a 500 MHz prestart task.
        let g = group(vec![
            task(TaskPhase::Main, 1000, 256),
            task(TaskPhase::Prestart, 500, 512),
        ]);
        let main = Resources {
            cpu: 1000,
            memory: 256,
        };
        for rule in [OLD, NEW] {
            assert_eq!(
                g.ask(main, rule),
                Resources {
                    cpu: 1000,
                    memory: 512
                },
                "{rule:?}"
            );
        }
    }

    #[test]
    fn the_releases_differ_on_poststart_and_sidecar_with_poststop() {
        // Poststart: not counted up to 1.9.3, part of main from 1.9.4.
        let g = group(vec![
            task(TaskPhase::Main, 500, 100),
            task(TaskPhase::Poststart, 300, 100),
        ]);
        let main = Resources {
            cpu: 500,
            memory: 100,
        };
        assert_eq!(
            g.ask(main, OLD),
            Resources {
                cpu: 500,
                memory: 100
            }
        );
        assert_eq!(
            g.ask(main, NEW),
            Resources {
                cpu: 800,
                memory: 200
            }
        );
        // A sidecar beside a large poststop task: added to it up to 1.9.3.
        let g = group(vec![
            task(TaskPhase::Main, 700, 100),
            task(TaskPhase::PrestartSidecar, 200, 100),
            task(TaskPhase::Poststop, 900, 100),
        ]);
        let main = Resources {
            cpu: 700,
            memory: 100,
        };
        assert_eq!(g.ask(main, OLD).cpu, 1100);
        assert_eq!(g.ask(main, NEW).cpu, 900);
    }

    #[test]
    fn stop_time_waits_for_delays_kill_timeouts_and_poststop_tasks() {
        let mut main = task(TaskPhase::Main, 1, 1);
        main.kill_timeout = Some(Millis::from_secs(180));
        main.shutdown_delay = Millis::from_secs(10);
        let mut sidecar = task(TaskPhase::PrestartSidecar, 1, 1);
        sidecar.kill_timeout = Some(Millis::from_secs(20));
        let mut poststop = task(TaskPhase::Poststop, 1, 1);
        poststop.run_for = Some(Millis::from_secs(7));
        let mut ephemeral = task(TaskPhase::Prestart, 1, 1);
        ephemeral.kill_timeout = Some(Millis::from_secs(999));
        let mut g = group(vec![main, sidecar, poststop, ephemeral]);
        g.shutdown_delay = Millis::from_secs(3);
        // 1.2.6: every task at once, kill_timeout uncapped.
        assert_eq!(g.stop_time(false, None), Millis::from_secs(3 + 190 + 7));
        // 2.0.5: sidecars after the main tasks, each capped at 30s.
        let cap = Some(Millis::from_secs(30));
        assert_eq!(g.stop_time(true, cap), Millis::from_secs(3 + 40 + 20 + 7));
        // A max_run_duration stop: the same kills, the poststop task never
        // started.
        assert_eq!(g.kill_time(true, cap), Millis::from_secs(3 + 40 + 20));
        // No kill_timeout written: the task exits at its signal.
        assert_eq!(
            group(vec![task(TaskPhase::Main, 1, 1)]).stop_time(true, cap),
            Millis::ZERO
        );
    }
}
