%% SPDX-License-Identifier: BSD-3-Clause
%% The gridwire application: a supervisor over the pool of channels.
-module(gridwire_app).
-behaviour(application).
-behaviour(supervisor).
-export([start/2, stop/1, init/1]).

start(_Type, _Args) ->
    N = gridwire:env(channels),
    persistent_term:put({gridwire, size}, N),
    supervisor:start_link({local, gridwire_sup}, ?MODULE, N).

stop(_) ->
    persistent_term:erase({gridwire, size}),
    persistent_term:erase({gridwire, names}),
    ok.

%% A channel whose gateway goes away reconnects by itself; one that cannot
%% start (no gateway) fails the start with its reason.
init(N) ->
    Socket = gridwire:env(socket),
    Children = [#{id => {chan, I},
                  start => {gridwire_chan, start_link, [I, Socket, #{}]}}
                || I <- lists:seq(0, N - 1)],
    {ok, {#{strategy => one_for_one, intensity => 10, period => 10}, Children}}.
