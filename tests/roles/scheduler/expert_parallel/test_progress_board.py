"""The progress board: incarnations, readiness and the generation every rank derives alike."""

from roles.scheduler.expert_parallel.progress_board import ProgressBoard


def test_a_restarted_rank_is_a_new_incarnation_and_a_new_generation(tmp_path):
    path = str(tmp_path / "board")
    rank0, rank1 = ProgressBoard(path, 2, 0), ProgressBoard(path, 2, 1)
    assert rank0.start_incarnation() == 1
    assert rank0.not_ready() == [0, 1]  # rank 1 has not even started
    rank1.start_incarnation()
    rank0.mark_ready()
    rank1.mark_ready()
    assert rank0.not_ready() == [] and rank0.generation() == 2
    again = ProgressBoard(path, 2, 1)  # rank 1's next process maps the same pages
    assert again.start_incarnation() == 2
    assert rank0.not_ready() == [1] and rank0.generation() == 3
    again.mark_ready()
    assert rank0.not_ready() == []


def test_the_ranks_behind_a_collective_are_named(tmp_path):
    path = str(tmp_path / "board")
    rank0, rank1 = ProgressBoard(path, 2, 0), ProgressBoard(path, 2, 1)
    rank0.enter(), rank1.enter()
    assert rank0.enter() == 2
    assert rank0.behind(2) == [1]
    rank1.reset_entered()
    assert rank0.behind(1) == [1]
