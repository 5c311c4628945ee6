%% SPDX-License-Identifier: BSD-3-Clause
%% A service: the process that registered its name, running each request
%% in a handler process of its own (as ecall runs a call), at most
%% max_handlers at a time. Past that, requests wait in this process's
%% mailbox, which its channel bounds (max_mailbox) like any other: the
%% gateway then holds, and rejects, what comes.
-module(gridwire_service).
-export([start/3, stop/1]).

start(Service, Fun, Opts) when is_function(Fun, 1) ->
    Parent = self(),
    Max = maps:get(max_handlers, Opts, gridwire:env(max_handlers)),
    Pid = spawn(fun() ->
                        process_flag(trap_exit, true),
                        R = gridwire:register_service(Service, Opts),
                        Parent ! {self(), R},
                        R =:= ok andalso loop(Service, Fun, Max, 0)
                end),
    receive {Pid, ok} -> {ok, Pid}; {Pid, Error} -> Error end.

loop(Service, Fun, Max, Running) when Running < Max ->
    receive
        {gridwire_request, Node, Sender, CallId, Req} ->
            spawn_link(fun() -> answer(Node, Sender, CallId, run(Fun, Req)) end),
            loop(Service, Fun, Max, Running + 1);
        {gridwire_cast, _Node, Req} ->
            spawn_link(fun() -> run(Fun, Req) end),
            loop(Service, Fun, Max, Running + 1);
        {'EXIT', _, _} ->
            loop(Service, Fun, Max, Running - 1);
        {stop, From} ->
            quit(Service, From)
    end;
loop(Service, Fun, Max, Running) ->
    receive
        {'EXIT', _, _} -> loop(Service, Fun, Max, Running - 1);
        {stop, From} -> quit(Service, From)
    end.

%% The name goes before the process does, so it can be served again at once.
quit(Service, From) ->
    gridwire:unregister(Service),
    From ! {self(), stopped}.

%% Stop serving: ok once the name is free again.
stop(Pid) ->
    Pid ! {stop, self()},
    receive {Pid, stopped} -> ok after 5000 -> {error, timeout} end.

run(Fun, Req) ->
    try Fun(Req) of
        {ok, _} = R -> R;
        {error, _} = R -> R;
        Other -> {error, {bad_return, Other}}
    catch
        Class:Why -> {error, {'EXIT', {Class, Why}}}
    end.

%% The answer goes on the handler's own channel; a full one is waited for
%% up to about 100 ms, then the caller's timeout tells it.
answer(Node, Sender, CallId, {Tag, Value}) ->
    Bin = term_to_binary(Value),
    answer(Node, Sender, CallId, Tag =:= error, Bin, 100).

answer(Node, Sender, CallId, Failed, Bin, Tries) ->
    case gridwire_nif:respond(gridwire:channel(), Node, Sender, CallId, Failed, Bin) of
        {error, eagain} when Tries > 0 ->
            receive after 1 -> answer(Node, Sender, CallId, Failed, Bin, Tries - 1) end;
        _ -> ok
    end.
