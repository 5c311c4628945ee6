%% SPDX-License-Identifier: BSD-3-Clause
%% One gateway channel of the pool, and the one process that drains it.
%%
%% Processes send on the channel from their own schedulers (gridwire.erl
%% calls the NIF directly); this process only receives. It drains when the
%% NIF's select says the channel has something, or when calls in flight
%% want a look, and never blocks: an empty channel is armed and selected.
%% Every message goes straight from the NIF to the process that registered
%% its endpoint. That process's mailbox is looked at every 64 deliveries:
%% past its limit (max_mailbox) the channel stops draining until the
%% mailbox is down to half, so what does not fit stays in the channel's
%% ring, and the gateway holds, then REJECTs, what comes for it. Memory
%% stays bounded; the senders are told. A slow receiver holds up the other
%% endpoints of its channel: give it a channel of its own (a pool slot is
%% chosen by the registering process's pid).
%%
%% Registered processes are monitored: an endpoint goes when its process
%% does. When the gateway goes away, sends say {error, epipe}, waiting
%% callers get {error, epipe}, and the channel reconnects in place (the
%% same pool slot, so no process changes channel and none of its messages
%% overtake another), registering its endpoints again.
-module(gridwire_chan).
-behaviour(gen_server).
-export([start_link/3, register/5, unregister/2]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2, terminate/2]).

-define(BATCH, 256).
-define(RECONNECT_MS, 200).

-record(st, {chan, index, socket,
             regs = #{},      % Pid => {MonitorRef, [Name], MaxMailbox}
             paused = #{},    % Pid => MaxMailbox: the mailboxes over their limit
             timer = none,    % a drain or pause check due
             connected = true,
             orphans = 0}).

start_link(Index, Socket, Opts) ->
    gen_server:start_link(?MODULE, {Index, Socket, Opts}, []).

%% Kind: endpoint | service | {topic, Policy} (GW_SUB_*).
register(Server, Name, Pid, Kind, Opts) ->
    gen_server:call(Server, {register, Name, Pid, Kind, Opts}, infinity).

unregister(Server, Name) ->
    gen_server:call(Server, {unregister, Name}, infinity).

init({Index, Socket, _Opts}) ->
    process_flag(message_queue_data, off_heap),
    process_flag(trap_exit, true), % terminate/2 closes the channel
    %% Draining is the VM's receive interrupt: ahead of the senders, or a
    %% busy VM lets its channel fill and the gateway rejects what comes.
    process_flag(priority, high),
    case gridwire_nif:open(Socket, Index) of
        {ok, Chan} ->
            persistent_term:put({gridwire, chan, Index}, {Chan, self()}),
            self() ! drain,
            {ok, #st{chan = Chan, index = Index, socket = Socket}};
        {error, Why} ->
            {stop, {gateway, Socket, Why}}
    end.

handle_call({register, Name, Pid, Kind, Opts}, _From, S = #st{chan = C, regs = Regs}) ->
    Raw = maps:get(raw, Opts, false),
    case gridwire_nif:register(C, Name, Pid, Kind, Raw) of
        ok ->
            Max = maps:get(max_mailbox, Opts, gridwire:env(max_mailbox)),
            Regs1 = case Regs of
                        #{Pid := {Ref, Names, _}} -> Regs#{Pid := {Ref, [Name | Names], Max}};
                        _ -> Regs#{Pid => {erlang:monitor(process, Pid), [Name], Max}}
                    end,
            {reply, ok, S#st{regs = Regs1}};
        Error ->
            {reply, Error, S}
    end;
handle_call({unregister, Name}, {Pid, _}, S = #st{chan = C, regs = Regs}) ->
    Reply = gridwire_nif:unregister(C, Name, Pid),
    Regs1 = case Regs of
                #{Pid := {Ref, Names, Max}} ->
                    case lists:delete(Name, Names) of
                        [] -> erlang:demonitor(Ref, [flush]), maps:remove(Pid, Regs);
                        Left -> Regs#{Pid := {Ref, Left, Max}}
                    end;
                _ -> Regs
            end,
    {reply, Reply, S#st{regs = Regs1}};
handle_call(stats, _From, S = #st{chan = C}) ->
    {reply, (gridwire_nif:stats(C))#{orphans => S#st.orphans,
                                     paused => map_size(S#st.paused),
                                     connected => S#st.connected}, S}.

handle_cast(_, S) ->
    {noreply, S}.

handle_info({select, _Res, _Fd, ready_input}, S) ->
    {noreply, drain(S)};
handle_info(drain, S) ->
    {noreply, drain(S#st{timer = none})};
handle_info(reconnect, S = #st{chan = C, socket = Sock}) ->
    case gridwire_nif:reconnect(C, Sock) of
        ok ->
            logger:notice("gridwire: channel ~b reconnected to ~s", [S#st.index, Sock]),
            {noreply, drain(S#st{connected = true, timer = none})};
        {error, _} ->
            {noreply, S#st{timer = erlang:send_after(?RECONNECT_MS, self(), reconnect)}}
    end;
handle_info({gridwire_orphan, _Node, _Endpoint}, S) ->
    %% For an endpoint whose process had just gone: dropped, as a message
    %% to a dead pid is.
    {noreply, S#st{orphans = S#st.orphans + 1}};
handle_info({gridwire_reject, Node, Endpoint, Why}, S) ->
    %% A REJECT whose sender is past the NIF's window (2^18 sends ago).
    logger:warning("gridwire: a message to endpoint ~b on node ~b was not delivered (~p); "
                   "its sender sent it too long ago to be told", [Endpoint, Node, Why]),
    {noreply, S};
handle_info({gridwire_lost, N}, S) ->
    %% The gateway dropped REJECTs for this channel's senders: the VM read
    %% nothing while they waited (stats/0 counts them, rejects_lost).
    logger:warning("gridwire: ~b messages sent on channel ~b were not delivered and their "
                   "senders could not be told (the VM read nothing for [chan] dest_block_ms): "
                   "give the gateway a larger [chan] ring and dest_block_ms", [N, S#st.index]),
    {noreply, S};
handle_info({'DOWN', Ref, process, Pid, _}, S = #st{chan = C, regs = Regs}) ->
    case Regs of
        #{Pid := {Ref, Names, _}} ->
            [gridwire_nif:unregister(C, N, Pid) || N <- Names],
            S1 = S#st{regs = maps:remove(Pid, Regs), paused = maps:remove(Pid, S#st.paused)},
            {noreply, drain(S1)};
        _ ->
            {noreply, S}
    end;
handle_info(_, S) ->
    {noreply, S}.

terminate(_, #st{chan = C, index = I}) ->
    persistent_term:erase({gridwire, chan, I}),
    gridwire_nif:close(C).

%% Drain unless a mailbox is over its limit; then look again in a
%% millisecond.
drain(S = #st{connected = false}) ->
    S;
drain(S = #st{paused = P}) when map_size(P) > 0 ->
    case maps:filter(fun over_half/2, P) of
        P1 when map_size(P1) > 0 -> later(1, S#st{paused = P1});
        _ -> drain(S#st{paused = #{}})
    end;
drain(S = #st{chan = C}) ->
    {Status, Due} = gridwire_nif:drain(C, ?BATCH),
    S1 = S#st{paused = lists:foldl(fun(Pid, Acc) -> check(Pid, Acc, S) end, #{}, Due)},
    case Status of
        _ when map_size(S1#st.paused) > 0 -> later(1, S1);
        more -> later(0, S1);
        armed -> S1;
        {wait, Ms} -> later(Ms, S1);
        closed ->
            logger:warning("gridwire: channel ~b: the gateway at ~s went away; reconnecting",
                           [S#st.index, S#st.socket]),
            cancel(S1),
            self() ! reconnect,
            S1#st{connected = false, timer = none}
    end.

check(Pid, Paused, #st{regs = Regs}) ->
    case Regs of
        #{Pid := {_, _, Max}} ->
            case erlang:process_info(Pid, message_queue_len) of
                {message_queue_len, L} when L > Max -> Paused#{Pid => Max};
                _ -> Paused
            end;
        _ -> Paused
    end.

over_half(Pid, Max) ->
    case erlang:process_info(Pid, message_queue_len) of
        {message_queue_len, L} -> L > Max div 2;
        undefined -> false
    end.

%% One timer at a time: the earliest wins.
later(0, S) ->
    cancel(S),
    self() ! drain,
    S#st{timer = now};
later(Ms, S = #st{timer = now}) when Ms > 0 ->
    S;
later(Ms, S) ->
    cancel(S),
    S#st{timer = erlang:send_after(Ms, self(), drain)}.

cancel(#st{timer = T}) when is_reference(T) -> erlang:cancel_timer(T);
cancel(_) -> ok.
