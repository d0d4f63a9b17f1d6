"""Work tickets (``tl.atomic_add(counter, 1)`` whose result picks the work): scheduled round robin by
arrival in the checks and by program id in the trace, so work keyed on a ticket is checked and traced
as work keyed on a program id is (contract/tickets.py)."""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"   # before anything imports triton

from pathlib import Path

import pytest

from kernelfoundry.evaluate.child.entry import ensure_interpreter
from kernelfoundry.evaluate.inprocess import check_trusted, trace_trusted
from kernelfoundry.evaluate.judge.anticheat import hack_gate
from kernelfoundry.task import load_task

ensure_interpreter()

REPO = Path(__file__).resolve().parents[2]
RELU = load_task(REPO / "experiments" / "tasks" / "relu.yaml")
NAIVE = (REPO / "experiments" / "tasks" / "kernels" / "relu_naive.py").read_text()
TICKET = NAIVE.replace(
    "def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):\n"
    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
    "def relu_kernel(x_ptr, y_ptr, counter_ptr, n_elements, BLOCK: tl.constexpr):\n"
    "    tile = tl.atomic_add(counter_ptr, 1)\n"
    "    offs = tile * BLOCK + tl.arange(0, BLOCK)").replace(
    "    relu_kernel[(triton.cdiv(n, BLOCK),)](x, y, n,",
    "    counter = torch.zeros((1,), device=x.device, dtype=torch.int32)\n"
    "    relu_kernel[(triton.cdiv(n, BLOCK),)](x, y, counter, n,")
# a persistent work queue: 3 programs draw tiles until none is left (a while loop over tickets)
QUEUE = TICKET.replace(
    "    tile = tl.atomic_add(counter_ptr, 1)\n    offs = tile * BLOCK + tl.arange(0, BLOCK)\n"
    "    mask = offs < n_elements\n"
    "    x = tl.load(x_ptr + offs, mask=mask, other=0.0)\n"
    "    tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)\n",
    "    tile = tl.atomic_add(counter_ptr, 1)\n"
    "    while tile * BLOCK < n_elements:\n"
    "        offs = tile * BLOCK + tl.arange(0, BLOCK)\n"
    "        mask = offs < n_elements\n"
    "        x = tl.load(x_ptr + offs, mask=mask, other=0.0)\n"
    "        tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)\n"
    "        tile = tl.atomic_add(counter_ptr, 1)\n").replace(
    "relu_kernel[(triton.cdiv(n, BLOCK),)]", "relu_kernel[(min(3, triton.cdiv(n, BLOCK)),)]")


# the same queue on 1024 programs, and its twin that strides over tiles by program id: one schedule
WIDE_QUEUE = QUEUE.replace("relu_kernel[(min(3, triton.cdiv(n, BLOCK)),)]", "relu_kernel[(min(1024, triton.cdiv(n, BLOCK)),)]")
STRIDED = NAIVE.replace(
    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "    mask = offs < n_elements\n"
    "    x = tl.load(x_ptr + offs, mask=mask, other=0.0)\n"
    "    tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)\n",
    "    for tile in range(tl.program_id(0), tl.cdiv(n_elements, BLOCK), tl.num_programs(0)):\n"
    "        offs = tile * BLOCK + tl.arange(0, BLOCK)\n"
    "        mask = offs < n_elements\n"
    "        x = tl.load(x_ptr + offs, mask=mask, other=0.0)\n"
    "        tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)\n").replace(
    "relu_kernel[(triton.cdiv(n, BLOCK),)]", "relu_kernel[(min(1024, triton.cdiv(n, BLOCK)),)]")


def test_the_ticket_kernels_are_what_they_claim():
    assert TICKET != NAIVE and QUEUE != TICKET and "while tile" in QUEUE
    assert hack_gate(TICKET).passed and hack_gate(QUEUE).passed
    assert WIDE_QUEUE != QUEUE and QUEUE_AND != QUEUE and "for tile in range" in STRIDED


def test_a_ticket_loop_is_sampled_and_traced_like_its_grid_stride_twin():
    """A work queue's trips are its scheduled tickets, known in advance: the loop becomes a loop over
    them, so the trace samples it as it samples the grid-stride loop that visits the same tiles
    (6,144 trips per program at the target: a while loop ran every one)."""
    _, twin = trace_trusted(STRIDED, RELU, [{"BLOCK": 256}])
    gate, traced = trace_trusted(WIDE_QUEUE, RELU, [{"BLOCK": 256}])
    assert gate.passed, gate.reason
    a, b = twin[0].launches[0], traced[0].launches[0]
    assert a.num_programs == b.num_programs == 1024
    assert b.loop_trips == pytest.approx(a.loop_trips, rel=1e-6) and b.loop_trips > 6000
    assert b.traffic["x_ptr"].load_bytes == pytest.approx(a.traffic["x_ptr"].load_bytes, rel=1e-6)
    assert b.traffic["y_ptr"].store_bytes == pytest.approx(a.traffic["y_ptr"].store_bytes, rel=1e-6)


# a test that is not elementwise (Python's `and` asks a block for one truth value): one ticket at a time
QUEUE_AND = QUEUE.replace("    while tile * BLOCK < n_elements:\n", "    while tile * BLOCK < n_elements and tile >= 0:\n")


@pytest.mark.parametrize("source", [TICKET, QUEUE, QUEUE_AND], ids=["one-ticket", "work-queue", "scalar-test"])
def test_ticket_kernels_pass_the_checks(source):
    gate = check_trusted(source, RELU, [{"BLOCK": 256}])
    assert gate.passed, gate.reason


def test_a_ticket_kernel_is_traced_like_its_program_id_twin():
    """The trace gives each sampled program the ticket of its program id: the same tiles, so the same
    traffic as the twin that indexes by tl.program_id."""
    _, twin = trace_trusted(NAIVE, RELU, [{"BLOCK": 256}])
    gate, traced = trace_trusted(TICKET, RELU, [{"BLOCK": 256}])
    assert gate.passed, gate.reason
    a, b = twin[0].launches[0], traced[0].launches[0]
    assert a.sampled_programs == b.sampled_programs
    assert a.traffic["x_ptr"].to_dict() == b.traffic["x_ptr"].to_dict()
    assert a.traffic["y_ptr"].to_dict() == b.traffic["y_ptr"].to_dict()


def test_work_on_late_tickets_is_traced():
    """Tickets past 64 read x a second time (honest, heavier).  Tickets in arrival order would give the
    trace's few sampled programs the first tickets and hide that pass; scheduled by program id, the
    sampled programs (spread over a grid of many thousands) nearly all do it."""
    heavy = TICKET.replace("    x = tl.load(x_ptr + offs, mask=mask, other=0.0)\n",
                           "    x = tl.load(x_ptr + offs, mask=mask, other=0.0)\n"
                           "    if tile >= 64:\n"
                           "        x = tl.maximum(x, tl.load(x_ptr + offs, mask=mask, other=0.0, cache_modifier='.cg'))\n")
    assert heavy != TICKET
    _, once = trace_trusted(TICKET, RELU, [{"BLOCK": 256}])
    gate, twice = trace_trusted(heavy, RELU, [{"BLOCK": 256}])
    assert gate.passed, gate.reason
    one, two = once[0].launches[0].traffic["x_ptr"], twice[0].launches[0].traffic["x_ptr"]
    assert two.load_bytes > 1.5 * one.load_bytes, (one, two)


def test_work_keyed_on_late_tickets_is_seen_by_the_checks():
    """Tickets past the first few do half a block: under arrival-order tickets in a sampled trace this
    hid from nothing; here every check run hands out every ticket, so the output is wrong."""
    lazy = TICKET.replace("    x = tl.load(x_ptr + offs, mask=mask, other=0.0)",
                          "    mask = mask & ((tile < 4) | (tl.arange(0, BLOCK) < BLOCK // 2))\n"
                          "    x = tl.load(x_ptr + offs, mask=mask, other=0.0)")
    assert lazy != TICKET
    gate = check_trusted(lazy, RELU, [{"BLOCK": 256}])
    assert not gate.passed and "NaN" in gate.reason


def test_a_ticket_loop_whose_counter_is_drawn_again_inside_its_trips_fails():
    """The counter passed twice (two parameters, one tensor): a draw inside the trips would take tickets
    the loop's scheduled trips also run on (on a GPU the loop would skip them)."""
    twice = QUEUE.replace("counter_ptr, n_elements, BLOCK: tl.constexpr):",
                          "counter_ptr, again_ptr, n_elements, BLOCK: tl.constexpr):").replace(
        "        x = tl.load(x_ptr + offs, mask=mask, other=0.0)\n",
        "        x = tl.load(x_ptr + offs, mask=mask, other=0.0) + 0 * tl.atomic_add(again_ptr, 1)\n").replace(
        "(x, y, counter, n,", "(x, y, counter, counter, n,")
    assert twice.count("again_ptr") == 2 and "counter, counter, n" in twice
    gate = check_trusted(twice, RELU, [{"BLOCK": 256}])
    assert not gate.passed and "drawn inside the trips" in gate.reason, gate.reason
