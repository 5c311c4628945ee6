%% SPDX-License-Identifier: BSD-3-Clause
%% The article's experiment (../shared/reference, "The numbers"), scaled to
%% this machine: N writer processes on node A, each sending the 225-byte
%% nested map M times with a 100 ms pause, to receivers on node B; native
%% Erlang distribution (!, erpc:cast, erpc:call) against gridwire (send,
%% cast, call). scripts/bench_erlang.sh runs it across the two namespaces:
%% run/1 on A (the sending VM, where the resource bill is taken), serve/0
%% on B.
-module(gridwire_bench).
-export([run/1, serve/0, deliver/2, echo/1, b_setup/2, b_wait/1, b_teardown/1, msg/0]).

-define(PAUSE_MS, 100).

%% The payload: three sub-maps of ten atom fields, 225 bytes encoded.
msg() ->
    F = maps:from_list([{list_to_atom([C]), C - $a} || C <- lists:seq($a, $j)]),
    #{feeds => F, meter => F, relay => F}.

%% --- node B ---

serve() ->
    %% Its atoms, as a receiving application's code has them: a safe
    %% decode creates none.
    _ = msg(),
    ok = gridwire:start(#{socket => os:getenv("GW_SOCK_B"), channels => 2}),
    register(bench_b, self()),
    receive stop -> ok end.

%% Receivers for one point: R processes, each counting into a shared
%% counter (the cast and call paths count in their handlers). Returns what
%% A needs to address them.
b_setup(Op, R) ->
    Counter = counters:new(1, [write_concurrency]),
    Self = self(),
    Pids = [spawn(fun() -> recv_init(Self, Op, I, Counter) end) || I <- lists:seq(1, R)],
    [receive {ready, P} -> ok end || P <- Pids],
    persistent_term:put(bench_counter, Counter),
    Services = case Op of
                   cast_gw -> [gridwire:serve(<<"bench_cast">>, fun cast_gw/1)];
                   call_gw -> [gridwire:serve(<<"bench_call">>, fun(M) -> {ok, echo(M)} end)];
                   _ -> []
               end,
    persistent_term:put(bench_services, [P || {ok, P} <- Services]),
    [] = [E || E <- Services, element(1, E) =/= ok],
    Pids.

recv_init(Setup, Op, I, Counter) ->
    Op =:= send_gw andalso (ok = gridwire:register(ep(I))),
    Setup ! {ready, self()},
    recv_loop(Op, I, Counter).

recv_loop(Op, I, Counter) ->
    receive
        {gridwire, _, _} -> counters:add(Counter, 1, 1), recv_loop(Op, I, Counter);
        {bench, _} -> counters:add(Counter, 1, 1), recv_loop(Op, I, Counter);
        {stop, From} ->
            %% The name is free before the next point registers it again.
            Op =:= send_gw andalso gridwire:unregister(ep(I)),
            From ! {stopped, self()}
    end.

%% erpc:cast's function on B: deliver to the writer's receiver.
deliver(Pid, Msg) -> Pid ! {bench, Msg}.
%% erpc:call's function: the reply is the message.
echo(Msg) -> counters:add(persistent_term:get(bench_counter), 1, 1), Msg.
cast_gw(_Msg) -> counters:add(persistent_term:get(bench_counter), 1, 1), {ok, done}.

%% Until the counter reaches Expect, or nothing more came for 3 s:
%% {Count, ms since the last one came}.
b_wait(Expect) ->
    b_wait(persistent_term:get(bench_counter), Expect, -1, erlang:monotonic_time(millisecond)).
b_wait(Counter, Expect, Last, Since) ->
    N = counters:get(Counter, 1),
    Now = erlang:monotonic_time(millisecond),
    if N >= Expect -> {N, 0};
       N =:= Last, Now - Since > 3000 -> {N, Now - Since};
       N =:= Last -> timer:sleep(5), b_wait(Counter, Expect, Last, Since);
       true -> timer:sleep(5), b_wait(Counter, Expect, N, Now)
    end.

b_teardown(Pids) ->
    [P ! {stop, self()} || P <- Pids],
    [receive {stopped, P} -> ok end || P <- Pids],
    [ok = gridwire:unserve(S) || S <- persistent_term:get(bench_services)],
    ok.

ep(I) -> <<"r", (integer_to_binary(I))/binary>>.

%% --- node A ---

%% run(#{b => Node, writers => [N], msgs => M, receivers => R, ops => [Op], csv => File})
run(Opts) ->
    B = maps:get(b, Opts),
    true = net_kernel:connect_node(B),
    ok = gridwire:start(#{socket => os:getenv("GW_SOCK_A"), channels => maps:get(channels, Opts, 2)}),
    NodeB = list_to_integer(os:getenv("GW_NODE_B")),
    wait_up(NodeB, 100),
    erlang:system_flag(scheduler_wall_time, true),
    M = maps:get(msgs, Opts),
    Rows = [point(B, NodeB, Op, N, M, min(N, maps:get(receivers, Opts)))
            || N <- maps:get(writers, Opts), Op <- maps:get(ops, Opts)],
    write_csv(maps:get(csv, Opts), Rows),
    erpc:call(B, erlang, send, [bench_b, stop]),
    ok.

wait_up(_, 0) -> error(node_b_down);
wait_up(N, K) ->
    case gridwire:node_up(N) of true -> ok; false -> timer:sleep(100), wait_up(N, K - 1) end.

point(B, NodeB, Op, N, M, R) ->
    Expect = N * M,
    Pids = erpc:call(B, ?MODULE, b_setup, [Op, R], 60000),
    Msg = msg(),
    Target = list_to_tuple(case Op of
                               send_gw -> [ep(I) || I <- lists:seq(1, R)];
                               _ -> Pids
                           end),
    Self = self(),
    Writers = [spawn_opt(fun() -> writer(Self, Op, B, NodeB, element((W rem R) + 1, Target), Msg, M) end,
                         [{message_queue_data, off_heap}])
               || W <- lists:seq(0, N - 1)],
    garbage_collect(),
    Mem0 = erlang:memory(total),
    Sampler = spawn(fun() -> sample(Mem0, 0) end),
    SW0 = lists:sort(erlang:statistics(scheduler_wall_time)),
    Cpu0 = cpu(),
    T0 = erlang:monotonic_time(microsecond),
    [W ! go || W <- Writers],
    %% Done when B has counted every message, or nothing came for 3 s.
    {Got, Idle} = erpc:call(B, ?MODULE, b_wait, [Expect], infinity),
    T1 = erlang:monotonic_time(microsecond) - Idle * 1000, % the last one's arrival
    SW1 = lists:sort(erlang:statistics(scheduler_wall_time)),
    Cpu = maps:map(fun(K, V) -> (V - maps:get(K, Cpu0)) / 100 end, cpu()),
    Sampler ! {stop, self()},
    {PeakMem, PeakRq} = receive {peak, Pm, Pr} -> {Pm, Pr} end,
    %% REJECTs come within dest_block_ms (100 ms) and a round trip.
    timer:sleep(500),
    [W ! report || W <- Writers],
    {{Errors, FirstError}, Rejected} = collect_errors(Writers, {0, none}, 0),
    Errors > 0 andalso io:format("  ~b errors, the first: ~p~n", [Errors, FirstError]),
    Got < Expect andalso short(Expect - Got, erpc:call(B, gridwire, stats, [])),
    erpc:call(B, ?MODULE, b_teardown, [Pids], 60000),
    Elapsed = (T1 - T0) / 1.0e6,
    Busy = busy(SW0, SW1),
    Scheds = erlang:system_info(schedulers),
    Row = #{op => Op, writers => N, msgs => Expect, delivered => Got,
            intended => N * 1000 / ?PAUSE_MS, rate => Got / Elapsed, elapsed => Elapsed,
            peak_mem_mb => PeakMem / 1048576, busy => Busy, max_runq => PeakRq,
            %% Above what the VM held with its writers spawned: the backlog.
            backlog_mb => max(PeakMem - Mem0, 0) / 1048576,
            sched_s_per_m => Busy * Scheds * Elapsed / max(Got / 1.0e6, 1.0e-9),
            errors => Errors, rejected => Rejected,
            cpu_vm_a => maps:get(vm_a, Cpu), cpu_vm_b => maps:get(vm_b, Cpu),
            cpu_gw_a => maps:get(gw_a, Cpu), cpu_gw_b => maps:get(gw_b, Cpu)},
    io:format("~-8s ~6b writers: ~9b msg/s of ~8b intended, ~7.2f s, ~7.1f MB peak, "
              "busy ~5.1f %, ~6.1f sched-s/M, run queue ~b, ~b of ~b delivered, ~b errors, ~b rejected~n",
              [Op, N, round(maps:get(rate, Row)), round(maps:get(intended, Row)), Elapsed,
               PeakMem / 1048576,
               Busy * 100, maps:get(sched_s_per_m, Row), PeakRq, Got, Expect, Errors, Rejected]),
    Row.

writer(Parent, Op, B, NodeB, To, Msg, M) ->
    receive go -> ok end,
    Errors = write(Op, B, NodeB, To, Msg, M, {0, none}),
    receive report -> ok end,
    Parent ! {writer_done, self(), Errors, rejects(0)}.

%% What gridwire could not deliver comes back to the writer.
rejects(N) ->
    receive {gridwire_reject, _, _, _} -> rejects(N + 1) after 0 -> N end.

%% Errors: {how many, the first}.
write(_, _, _, _, _, 0, E) -> E;
write(Op, B, NodeB, To, Msg, K, {N, First} = E) ->
    R = case Op of
            send -> To ! {bench, Msg}, ok;
            cast -> erpc:cast(B, ?MODULE, deliver, [To, Msg]);
            call -> try erpc:call(B, ?MODULE, echo, [Msg], 5000) of _ -> ok catch _:_ -> error end;
            send_gw -> gridwire:send(NodeB, To, Msg, 5000);
            cast_gw -> gridwire:cast(NodeB, <<"bench_cast">>, Msg, 5000);
            call_gw -> case gridwire:call(NodeB, <<"bench_call">>, Msg, 5000) of
                           {ok, _} -> ok;
                           Other -> Other
                       end
        end,
    receive after ?PAUSE_MS -> ok end,
    write(Op, B, NodeB, To, Msg, K - 1, case R of
                                            ok -> E;
                                            _ when N =:= 0 -> {1, R};
                                            _ -> {N + 1, First}
                                        end).

collect_errors([], E, R) -> {E, R};
collect_errors([W | Ws], {E, First}, R) ->
    receive
        {writer_done, W, {N, F}, Rj} ->
            collect_errors(Ws, {E + N, case First of none -> F; _ -> First end}, R + Rj)
    after 60000 -> collect_errors(Ws, {E + 1, First}, R)
    end.

%% Why some did not arrive, by node B's channels (the REJECTs are counted
%% at the writers).
short(N, Stats) ->
    Sum = fun(K) -> lists:sum([maps:get(K, M) || M <- Stats]) end,
    io:format("  short of ~b: node B's channels: ~b bad terms, ~b orphans, ~b paused~n",
              [N, Sum(bad_terms), Sum(orphans), Sum(paused)]).

%% Where the cores go: CPU ticks (1/100 s) so far of the two VMs and the
%% two gateways (GW_BENCH_PIDS="vm_b=PID,gw_a=PID,gw_b=PID").
cpu() ->
    Pids = [{vm_a, os:getpid()} | [list_to_tuple(string:split(KV, "="))
                                   || KV <- string:split(os:getenv("GW_BENCH_PIDS", ""), ",", all),
                                      KV =/= ""]],
    maps:from_list([{to_atom(K), ticks(P)} || {K, P} <- Pids]).

to_atom(K) when is_atom(K) -> K;
to_atom(K) -> list_to_atom(K).

ticks(Pid) ->
    case file:read_file("/proc/" ++ Pid ++ "/stat") of
        {ok, B} ->
            %% After the command's closing parenthesis: field 3 on; utime and stime are 14 and 15.
            [_, Rest] = string:split(B, ") ", trailing),
            F = string:split(Rest, " ", all),
            binary_to_integer(lists:nth(12, F)) + binary_to_integer(lists:nth(13, F));
        _ -> 0
    end.

%% The sending VM's peak memory and run queue, every 50 ms.
sample(PeakMem, PeakRq) ->
    receive {stop, To} -> To ! {peak, PeakMem, PeakRq}
    after 50 ->
        sample(max(PeakMem, erlang:memory(total)),
               max(PeakRq, erlang:statistics(total_run_queue_lengths)))
    end.

%% The normal schedulers' busy share of their wall time.
busy(SW0, SW1) ->
    S = erlang:system_info(schedulers),
    {A, T} = lists:foldl(fun({{I, A0, T0}, {I, A1, T1}}, {Ac, Tc}) when I =< S ->
                                 {Ac + A1 - A0, Tc + T1 - T0};
                            (_, Acc) -> Acc
                         end, {0, 0}, lists:zip(SW0, SW1)),
    case T of 0 -> 0.0; _ -> A / T end.

write_csv(File, Rows) ->
    Keys = [op, writers, msgs, delivered, intended, rate, elapsed, peak_mem_mb, backlog_mb, busy,
            sched_s_per_m, max_runq, errors, rejected, cpu_vm_a, cpu_vm_b, cpu_gw_a, cpu_gw_b],
    Lines = [lists:join(",", [atom_to_list(K) || K <- Keys])
             | [lists:join(",", [fmt(maps:get(K, R)) || K <- Keys]) || R <- Rows]],
    ok = file:write_file(File, [[L, "\n"] || L <- Lines]).

fmt(V) when is_float(V) -> io_lib:format("~.3f", [V]);
fmt(V) when is_integer(V) -> integer_to_list(V);
fmt(V) when is_atom(V) -> atom_to_list(V).
