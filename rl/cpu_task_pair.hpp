#pragma once
// Two tasks at once on the CPU, for the learner's actor and critic halves (rl/ppo_loss_fused.cpp): the
// calling thread and one helper thread (started on first use, kept for the life of the process) claim the
// tasks as they come, and the caller waits only for a task the helper has taken. A helper that is not
// running when the tasks are posted (a busy machine) costs nothing: the caller takes both. An OpenMP
// region would wait at its join for every thread of its team, running or not, and on a loaded 2-core
// machine that wait costs a time slice per minibatch.
namespace surge::rl {

using PairTask = void (*)(void* context, int index);

// Runs task(context, 0) and task(context, 1), each once, and returns when both are done: on the calling
// thread alone unless `helped`, or while another thread is using the helper. A task that throws, on either
// thread, does not stop the other: once both are done, the exception of the lower-numbered task that threw
// is thrown again here, on the caller's thread.
void run_task_pair(PairTask task, void* context, bool helped);

}  // namespace surge::rl
