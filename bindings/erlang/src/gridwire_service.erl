%% SPDX-License-Identifier: BSD-3-Clause
%% A service: a pool of server processes (`servers`, by default one per
%% scheduler) sharing its name on one channel, which hands them its
%% requests and casts in turn (ecall's workers on the far node). Each runs
%% every request in a handler process of its own (as ecall runs a call), at
%% most max_handlers at a time; past that, requests wait in the server's
%% mailbox, which its channel bounds (max_mailbox) like any other: the
%% gateway then holds, and rejects, what comes. The pid serve/3 returns is
%% the servers' leader: stop/1 stops them all.
-module(gridwire_service).
-export([start/3, stop/1]).

start(Service, Fun, Opts) when is_function(Fun, 1) ->
    Parent = self(),
    Max = maps:get(max_handlers, Opts, gridwire:env(max_handlers)),
    N = min(maps:get(servers, Opts, erlang:system_info(schedulers)), 16), % the NIF's bound
    Chan = gridwire:channel_process(),
    Leader = spawn(fun() ->
                           process_flag(trap_exit, true),
                           L = self(),
                           Servers = [spawn_link(fun() -> server(Service, Fun, Max, Chan, Opts, L) end)
                                      || _ <- lists:seq(1, N)],
                           Rs = [receive {S, R} -> R; {'EXIT', S, W} -> {error, W} end
                                 || S <- Servers],
                           case [R || R <- Rs, R =/= ok] of
                               [] -> Parent ! {self(), ok}, lead(Servers);
                               [E | _] -> [exit(S, kill) || S <- Servers], Parent ! {self(), E}
                           end
                   end),
    receive {Leader, ok} -> {ok, Leader}; {Leader, Error} -> Error end.

server(Service, Fun, Max, Chan, Opts, Leader) ->
    R = gridwire_chan:register(Chan, Service, self(), service, Opts),
    Leader ! {self(), R},
    R =:= ok andalso loop(Service, Chan, Fun, Max, atomics:new(1, [])).

%% The leader: stop/1 stops every server, each freeing its share of the name.
lead(Servers) ->
    receive
        {stop, From} ->
            [S ! {stop, self()} || S <- Servers],
            Until = erlang:monotonic_time(millisecond) + 5000, % for all of them
            [receive {S, stopped} -> ok
             after max(0, Until - erlang:monotonic_time(millisecond)) -> ok
             end || S <- Servers],
            From ! {self(), stopped};
        {'EXIT', _, Why} ->
            exit(Why)
    end.

%% Running handlers are counted in an atomic they decrement as they end:
%% no link, no exit message per request. At the bound, look again every
%% millisecond.
loop(Service, Chan, Fun, Max, Running) ->
    case atomics:get(Running, 1) < Max of
        true ->
            receive
                {gridwire_request, Node, Sender, CallId, Urgent, Req} ->
                    handle(Running, fun() ->
                                            answer({Node, Sender, CallId, Urgent}, run(Fun, Req))
                                    end),
                    loop(Service, Chan, Fun, Max, Running);
                {gridwire_cast, _Node, Req} ->
                    handle(Running, fun() -> run(Fun, Req) end),
                    loop(Service, Chan, Fun, Max, Running);
                {stop, From} ->
                    quit(Service, Chan, From)
            end;
        false ->
            receive
                {stop, From} -> quit(Service, Chan, From)
            after 1 -> loop(Service, Chan, Fun, Max, Running)
            end
    end.

handle(Running, F) ->
    atomics:add(Running, 1, 1),
    spawn(fun() -> try F() after atomics:sub(Running, 1, 1) end end).

%% Its share of the name goes before the process does, so the service can
%% be served again at once.
quit(Service, Chan, From) ->
    gridwire_chan:unregister(Chan, Service),
    From ! {self(), stopped}.

%% Stop serving: ok once the name is free again.
stop(Pid) ->
    Ref = erlang:monitor(process, Pid),
    Pid ! {stop, self()},
    receive
        {Pid, stopped} -> erlang:demonitor(Ref, [flush]), ok;
        {'DOWN', Ref, process, Pid, _} -> ok
    after 6000 -> % the leader gives its servers 5 s
        erlang:demonitor(Ref, [flush]),
        {error, timeout}
    end.

run(Fun, Req) ->
    try Fun(Req) of
        {ok, _} = R -> R;
        {error, _} = R -> R;
        Other -> {error, {bad_return, Other}}
    catch
        Class:Why -> {error, {'EXIT', {Class, Why}}}
    end.

%% The answer goes on the handler's own channel, in the request's class
%% (urgent or not); a full one is waited for up to about 100 ms, then the
%% caller's timeout tells it.
answer(To, {Tag, Value}) ->
    Bin = term_to_binary(Value),
    answer(To, Tag =:= error, Bin, 100).

answer({Node, Sender, CallId, Urgent} = To, Failed, Bin, Tries) ->
    case gridwire_nif:respond(gridwire:channel(), Node, Sender, CallId, Failed, Bin, Urgent) of
        {error, eagain} when Tries > 0 ->
            receive after 1 -> answer(To, Failed, Bin, Tries - 1) end;
        {error, emsgsize} -> % the caller hears why rather than timing out
            answer(To, true, term_to_binary(reply_too_large), Tries);
        _ -> ok
    end.
