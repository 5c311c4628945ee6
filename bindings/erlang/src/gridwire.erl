%% SPDX-License-Identifier: BSD-3-Clause
%% gridwire for Erlang: ecall's vocabulary over a local gridwire gateway.
%%
%%   gridwire:send(Node, Endpoint, Msg)       instead of Pid ! Msg
%%   gridwire:cast(Node, Service, Req)        instead of erpc:cast/4
%%   gridwire:call(Node, Service, Req, T)     instead of erpc:call/4
%%   cast_one, cast_all, call_one, call_any, call_all, call_all_wait
%%
%% Urgent messages: send/4 and cast/4 take #{timeout => Ms, urgent => true}
%% in place of a timeout, call/5 and the patterns #{urgent => true} in
%% their options. An urgent message never waits behind bulk ones (the
%% gateway takes it first, on a lane of its own); each process's urgent
%% messages stay in order, and may overtake its bulk ones. A reply travels
%% in its request's class.
%%
%% A Node is a gateway node id (an integer) or its name (an atom, as
%% nodes/0 lists them). Terms travel as term_to_binary and arrive decoded
%% (binary_to_term with [safe]): a process that registered an endpoint
%% gets {gridwire, FromNode, Msg}. A message that could not be delivered
%% comes back to the process that sent it as
%% {gridwire_reject, Node, EndpointId, Why}: nothing is dropped in silence.
%%
%% Channels: a pool of gateway channels per VM (the application's
%% `channels`, by default one per scheduler), each behind its own locks. A
%% process always uses the same one, chosen by hashing its pid (ecall's
%% pick_worker), so its messages stay in order even as it moves between
%% schedulers; one channel per scheduler would reorder them.
%%
%% Backpressure: a full channel is {error, eagain} at once (send/3), or a
%% bounded wait in Erlang (send/4, cast/4 with a timeout); no call blocks
%% a scheduler.
%%
%% Topics: subscribe(Topic, Policy) makes the calling process a subscriber
%% (Policy hold, latest or {latest, KeyBytes}: doc/api.md#topics); it gets
%% {gridwire_publish, Topic, FromNode, Msg} for every publish(Topic, Msg)
%% anywhere, in each publisher's order. The processes of one channel that
%% subscribe to a topic share one subscription (so one policy) and each
%% gets every publication.
-module(gridwire).
-compile({no_auto_import, [register/2, nodes/0]}).
-export([start/0, start/1, stop/0, env/1]).
-export([send/3, send/4, cast/3, cast/4, call/4, call/5]).
-export([register/1, register/2, unregister/1, serve/2, serve/3, unserve/1]).
-export([subscribe/2, subscribe/3, unsubscribe/1, publish/2, publish/3]).
-export([cast_one/3, cast_all/3, cast_all/4, call_one/4, call_one/5, call_any/4, call_any/5,
         call_all/4, call_all/5, call_all_wait/4]).
-export([nodes/0, node_id/1, local_node/0, node_up/1, endpoint_id/1, stats/0]).
-export([outcome_counts/2, pick_best/2]). % the pattern policies, for the tests
-export([channel/0, channel_process/0]). % for gridwire_service

-define(DEFAULTS, #{socket => "/run/gridwire/gw1.sock",
                    channels => erlang:system_info(schedulers),
                    max_mailbox => 10000,
                    max_handlers => 1000}).

%% --- the application ---

%% start(#{socket => Path, channels => N, max_mailbox => M, max_handlers => H})
start() -> start(#{}).
start(Opts) ->
    [application:set_env(gridwire, K, V) || {K, V} <- maps:to_list(Opts)],
    case application:ensure_all_started(gridwire) of
        {ok, _} -> ok;
        {error, {gridwire, {{shutdown, {failed_to_start_child, _, Why}}, _}}} -> {error, Why};
        {error, Why} -> {error, Why}
    end.

stop() -> application:stop(gridwire).

env(Key) -> application:get_env(gridwire, Key, maps:get(Key, ?DEFAULTS)).

%% The calling process's channel: {Chan, ChanProcess, Index}.
pick() ->
    N = persistent_term:get({gridwire, size}),
    I = erlang:phash2(self(), N),
    {Chan, Pid} = persistent_term:get({gridwire, chan, I}),
    {Chan, Pid, I}.

chan() -> element(1, pick()).

%% --- messages ---

send(Node, Endpoint, Msg) ->
    gridwire_nif:send(chan(), node_id(Node), Endpoint, term_to_binary(Msg), false).

%% As send/3, waiting up to TimeoutMs for room in a full channel; or with
%% options #{timeout => Ms (0: none), urgent => boolean()}.
send(Node, Endpoint, Msg, Opts) ->
    {T, U} = send_opts(Opts),
    Bin = term_to_binary(Msg),
    C = chan(),
    N = node_id(Node),
    retry(fun() -> gridwire_nif:send(C, N, Endpoint, Bin, U) end, deadline(T)).

cast(Node, Service, Req) ->
    gridwire_nif:cast(chan(), node_id(Node), Service, term_to_binary(Req), false).

cast(Node, Service, Req, Opts) ->
    {T, U} = send_opts(Opts),
    Bin = term_to_binary(Req),
    C = chan(),
    N = node_id(Node),
    retry(fun() -> gridwire_nif:cast(C, N, Service, Bin, U) end, deadline(T)).

%% To every subscriber of Topic, on any node: ok, or {error, Why} (eagain:
%% the channel is full). A subscriber that holds (policy hold) and stays
%% full makes the publisher hear {gridwire_reject, Node, TopicId, enobufs}.
publish(Topic, Msg) ->
    gridwire_nif:publish(chan(), Topic, term_to_binary(Msg), false).

%% As publish/2, with a timeout or #{timeout => Ms, urgent => boolean()}.
publish(Topic, Msg, Opts) ->
    {T, U} = send_opts(Opts),
    Bin = term_to_binary(Msg),
    C = chan(),
    retry(fun() -> gridwire_nif:publish(C, Topic, Bin, U) end, deadline(T)).

%% A timeout, or a map of options: {TimeoutMs, Urgent}.
send_opts(TimeoutMs) when is_integer(TimeoutMs) -> {TimeoutMs, false};
send_opts(#{} = Opts) -> {maps:get(timeout, Opts, 0), urgent(Opts)}.

urgent(Opts) -> maps:get(urgent, Opts, false) =:= true.

%% {ok, Reply} | {error, Reason} | {badrpc, nodedown | unreachable}. The
%% service's function returned {ok, Reply} or {error, Reason}; a call
%% always ends: reply, error, timeout, or its node down.
call(Node, Service, Req, TimeoutMs) -> call(Node, Service, Req, TimeoutMs, #{}).

%% As call/4, with options: #{urgent => true}.
call(Node, Service, Req, TimeoutMs, Opts) ->
    case call_start(Node, Service, term_to_binary(Req), TimeoutMs, urgent(Opts)) of
        {ok, Ref} -> call_wait(Ref, TimeoutMs);
        Error -> Error
    end.

call_start(_, _, _, TimeoutMs, _) when not is_integer(TimeoutMs); TimeoutMs =< 0 ->
    {error, einval}; % a call always has a deadline
call_start(Node, Service, Bin, TimeoutMs, Urgent) ->
    {C, _, I} = pick(),
    N = node_id(Node),
    case retry(fun() -> gridwire_nif:call(C, N, Service, Bin, TimeoutMs, Urgent) end,
               deadline(TimeoutMs)) of
        {ok, Id} -> {ok, {C, I, Id}};
        {error, ehostunreach} -> {badrpc, unreachable};
        {error, _} = E -> E
    end.

call_wait({C, I, Id}, TimeoutMs) ->
    %% The library ends every call by its timeout; the margin is for a
    %% channel process held up, after which the outcome is forgotten.
    receive
        {gridwire_reply, I, Id, Result} -> Result
    after TimeoutMs + 5000 ->
        gridwire_nif:forget(C, Id),
        receive {gridwire_reply, I, Id, Result} -> Result after 0 -> {error, timeout} end
    end.

retry(F, Deadline) ->
    case F() of
        {error, E} when E =:= eagain; E =:= ebusy ->
            case erlang:monotonic_time(millisecond) < Deadline of
                true -> receive after 1 -> retry(F, Deadline) end;
                false -> {error, E}
            end;
        R -> R
    end.

deadline(Ms) -> erlang:monotonic_time(millisecond) + Ms.

%% --- endpoints and services ---

%% Messages to Endpoint on this node arrive in the caller's mailbox as
%% {gridwire, FromNode, Msg}. Opts: max_mailbox (the caller's mailbox
%% bound, default 10,000), raw (true: Msg is the binary as sent).
register(Endpoint) -> register(Endpoint, #{}).
register(Endpoint, Opts) ->
    {_, Pid, _} = pick(),
    gridwire_chan:register(Pid, Endpoint, self(), endpoint, Opts).

%% The calling process gets {gridwire_publish, Topic, FromNode, Msg} for
%% each publication to Topic. Policy: hold (a full mailbox holds the
%% publisher, then REJECTs), latest (the newest message per key while it
%% falls behind; key: the first 8 bytes of the term as sent) or {latest,
%% KeyBytes} (1..64). Opts as register/2's. ok | {error, Why} (eexist:
%% another process of this channel subscribes with another policy).
subscribe(Topic, Policy) -> subscribe(Topic, Policy, #{}).
subscribe(Topic, Policy, Opts) ->
    case policy(Policy) of
        {ok, P} ->
            {_, Pid, _} = pick(),
            gridwire_chan:register(Pid, Topic, self(), {topic, P}, Opts);
        error ->
            {error, einval}
    end.

%% GW_SUB_HOLD, GW_SUB_LATEST, GW_SUB_LATEST_KEY(N).
policy(hold) -> {ok, 0};
policy(latest) -> {ok, 1};
policy({latest, N}) when is_integer(N), N >= 1, N =< 64 -> {ok, 1 bor (N bsl 8)};
policy(_) -> error.

unsubscribe(Topic) ->
    {_, Pid, _} = pick(),
    gridwire_chan:unregister(Pid, Topic).

channel() -> chan().
channel_process() -> element(2, pick()).

unregister(Endpoint) ->
    {_, Pid, _} = pick(),
    gridwire_chan:unregister(Pid, Endpoint).

%% Offer Service: `servers` processes (default: one per scheduler) take
%% its requests in turn; each request runs Fun(Req) in a process of its
%% own (as ecall's calls do), at most max_handlers at once per server; Fun
%% returns {ok, Reply} or {error, Reason} (a crash is {error, {'EXIT', Why}}).
%% Casts run Fun(Req) too, answering nothing. {ok, ServerPid}.
serve(Service, Fun) -> serve(Service, Fun, #{}).
serve(Service, Fun, Opts) -> gridwire_service:start(Service, Fun, Opts).

%% Stop a service: ok once its name is free (handlers running finish).
unserve(ServerPid) -> gridwire_service:stop(ServerPid).

%% --- several nodes (ecall's patterns) ---
%% Opts: #{strict => true} counts badrpc (a node unreachable or down) as
%% an error; by default it is ignored.

%% Fire and forget at one node: this one if listed, else the first up from
%% a random start. {ok, Node} | {error, ehostunreach}.
cast_one([], _, _) -> {error, einval};
cast_one(Nodes, Service, Req) ->
    Ids = [node_id(N) || N <- Nodes],
    Self = local_node(),
    Order = case lists:member(Self, Ids) of
                true -> [Self];
                false -> rotate(Ids, rand:uniform(length(Ids)) - 1)
            end,
    Bin = term_to_binary(Req),
    C = chan(),
    first_cast(C, [N || N <- Order, N =:= Self orelse gridwire_nif:node_up(C, N)], Service, Bin).

first_cast(_, [], _, _) -> {error, ehostunreach};
first_cast(C, [N | Rest], Service, Bin) ->
    case gridwire_nif:cast(C, N, Service, Bin, false) of
        ok -> {ok, N};
        {error, ehostunreach} -> first_cast(C, Rest, Service, Bin);
        E -> E
    end.

rotate(L, K) -> {A, B} = lists:split(K, L), B ++ A.

%% Fire and forget at every node: ok, or the first error that counts.
cast_all(Nodes, Service, Req) -> cast_all(Nodes, Service, Req, #{}).
cast_all(Nodes, Service, Req, Opts) ->
    Bin = term_to_binary(Req),
    C = chan(),
    Strict = maps:get(strict, Opts, false),
    Errors = [E || N <- Nodes,
                   E <- [case gridwire_nif:cast(C, node_id(N), Service, Bin, urgent(Opts)) of
                             {error, ehostunreach} -> {badrpc, unreachable};
                             R -> R
                         end],
                   outcome_counts(E, Strict)],
    case Errors of [] -> ok; [E | _] -> E end.

%% One node at a time, in order, until one answers {ok, _}.
call_one(Nodes, Service, Req, T) -> call_one(Nodes, Service, Req, T, #{}).
call_one([], _, _, _, _) -> {error, einval};
call_one(Nodes, Service, Req, T, Opts) ->
    Strict = maps:get(strict, Opts, false),
    lists:foldl(fun(_, {ok, _} = Done) -> Done;
                   (N, Best) -> pick_best(Best, {call(N, Service, Req, T, Opts), Strict})
                end, {badrpc, unreachable}, Nodes).

%% All at once; the first {ok, _} wins, else the last error that counts
%% (else the last badrpc).
call_any(Nodes, Service, Req, T) -> call_any(Nodes, Service, Req, T, #{}).
call_any([], _, _, _, _) -> {error, einval};
call_any(Nodes, Service, Req, T, Opts) ->
    Strict = maps:get(strict, Opts, false),
    Started = start_all(Nodes, Service, Req, T, urgent(Opts)),
    collect_any(Started, Strict, {badrpc, unreachable}, T).

collect_any([], _, Best, _) -> Best;
collect_any(Started, Strict, Best, T) ->
    {_, R, Rest} = next_outcome(Started, T),
    case R of
        {ok, _} -> forget_all(Rest), R;
        _ -> collect_any(Rest, Strict, pick_best(Best, {R, Strict}), T)
    end.

%% All at once; every node must answer {ok, _}: {ok, [{Node, Reply}]}, or
%% the first (in list order) error that counts.
call_all(Nodes, Service, Req, T) -> call_all(Nodes, Service, Req, T, #{}).
call_all([], _, _, _, _) -> {error, einval};
call_all(Nodes, Service, Req, T, Opts) ->
    Strict = maps:get(strict, Opts, false),
    Outcomes = all_outcomes(Nodes, Service, Req, T, urgent(Opts)),
    case [R || {_, R} <- Outcomes, outcome_counts(R, Strict)] of
        [E | _] -> E;
        [] ->
            case [{N, V} || {N, {ok, V}} <- Outcomes] of
                [] -> element(2, lists:last(Outcomes)); % nobody could be asked
                Oks -> {ok, Oks}
            end
    end.

%% All at once, every outcome: {[{Node, Reply}], [{Node, Error}]}.
call_all_wait(Nodes, Service, Req, T) ->
    Outcomes = all_outcomes(Nodes, Service, Req, T, false),
    {[{N, V} || {N, {ok, V}} <- Outcomes], [{N, E} || {N, E} <- Outcomes, element(1, E) =/= ok]}.

all_outcomes(Nodes, Service, Req, T, Urgent) ->
    Started = start_all(Nodes, Service, Req, T, Urgent),
    Got = collect_all(Started, T, #{}),
    [{N, maps:get(K, Got)} || {K, N, _} <- Started].

collect_all([], _, Acc) -> Acc;
collect_all(Started, T, Acc) ->
    {K, R, Rest} = next_outcome(Started, T),
    collect_all(Rest, T, Acc#{K => R}).

%% [{Key, Node, {ok, Ref} | Outcome}], Key its place in the list.
start_all(Nodes, Service, Req, T, Urgent) ->
    Bin = term_to_binary(Req),
    lists:zipwith(fun(K, N) -> {K, N, call_start(N, Service, Bin, T, Urgent)} end,
                  lists:seq(1, length(Nodes)), Nodes).

%% The next outcome of the started calls: those that never started first.
next_outcome(Started, T) ->
    case lists:partition(fun({_, _, {ok, {_, _, _}}}) -> false; (_) -> true end, Started) of
        {[{K, _, R} | Failed], Waiting} -> {K, R, Failed ++ Waiting};
        {[], Waiting} ->
            receive
                {gridwire_reply, I, Id, R} when is_integer(I) ->
                    case lists:partition(fun({_, _, {ok, {_, I2, Id2}}}) -> {I2, Id2} =:= {I, Id} end,
                                         Waiting) of
                        {[{K, _, _}], Rest} -> {K, R, Rest};
                        {[], _} -> next_outcome(Started, T) % a forgotten call's
                    end
            after T + 5000 ->
                %% The library ends calls by T: its channel is held up.
                %% Every call still waiting is a timeout.
                forget_all(Waiting),
                [{K, _, _} | Rest] = Waiting,
                {K, {error, timeout}, [{K2, N, {error, timeout}} || {K2, N, _} <- Rest]}
            end
    end.

%% Calls whose outcome no longer matters: dropped when it comes, and taken
%% out of the mailbox if it came already.
forget_all(Started) ->
    [begin
         gridwire_nif:forget(C, Id),
         receive {gridwire_reply, I, Id, _} -> ok after 0 -> ok end
     end || {_, _, {ok, {C, I, Id}}} <- Started],
    ok.

%% Does this outcome decide a pattern as an error?
outcome_counts({ok, _}, _) -> false;
outcome_counts(ok, _) -> false;
outcome_counts({badrpc, _}, Strict) -> Strict;
outcome_counts({error, _}, _) -> true.

%% The better of two failures so far: an answer that counts beats a badrpc.
pick_best(_, {{ok, _} = Ok, _}) -> Ok;
pick_best(Best, {R, Strict}) ->
    case outcome_counts(R, Strict) orelse element(1, Best) =:= badrpc of
        true -> R;
        false -> Best
    end.

%% --- nodes ---

%% [{Id, Name, up | down, self | peer}], from the gateway.
nodes() ->
    case gridwire_nif:nodes(chan()) of
        L when is_list(L) ->
            Names = maps:from_list([{binary_to_atom(Name), Id} || {Id, Name, _, _} <- L]),
            persistent_term:put({gridwire, names}, Names),
            [{Id, binary_to_atom(Name), updown(Up), whose(Self)} || {Id, Name, Up, Self} <- L];
        E -> E
    end.

updown(true) -> up;
updown(false) -> down.
whose(true) -> self;
whose(false) -> peer.

node_id(N) when is_integer(N) -> N;
node_id(Name) when is_atom(Name) ->
    case persistent_term:get({gridwire, names}, #{}) of
        #{Name := Id} -> Id;
        _ ->
            _ = nodes(),
            case persistent_term:get({gridwire, names}, #{}) of
                #{Name := Id} -> Id;
                _ -> erlang:error({unknown_node, Name})
            end
    end.

local_node() -> gridwire_nif:local_node(chan()).
node_up(Node) -> gridwire_nif:node_up(chan(), node_id(Node)).
endpoint_id(Name) -> gridwire_nif:endpoint_id(Name).

%% Per channel: delivered, rejects_unrouted, rejects_sender_gone, rejects_lost (sends
%% not delivered whose REJECTs the gateway dropped), bad_terms, endpoints, orphans, paused.
stats() ->
    N = persistent_term:get({gridwire, size}),
    [gen_server:call(element(2, persistent_term:get({gridwire, chan, I})), stats)
     || I <- lists:seq(0, N - 1)].
