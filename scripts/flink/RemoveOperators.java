// A copy of a Flink savepoint without the state of some operators, written with Flink's State Processor API:
//   java -cp <flink lib>/*:<flink-state-processor-api jar>:<classes> RemoveOperators SOURCE TARGET UID_HASH...
// SOURCE is the savepoint to copy (it stays as it is: the copy's _metadata points at its files), TARGET the new
// savepoint's directory, each UID_HASH an operator id (a job graph's vertex id) whose state the copy leaves out.
// It prints the copy's location on its last line; a failure is Flink's own exception on stderr and a non-zero exit.

import org.apache.flink.state.api.OperatorIdentifier;
import org.apache.flink.state.api.SavepointWriter;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

public final class RemoveOperators {
    private RemoveOperators() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: RemoveOperators SOURCE TARGET UID_HASH...");
            System.exit(2);
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        SavepointWriter writer = SavepointWriter.fromExistingSavepoint(env, args[0]);
        for (int i = 2; i < args.length; i++) {
            writer = writer.removeOperator(OperatorIdentifier.forUidHash(args[i]));
        }
        writer.write(args[1]);
        env.execute("changeops: a copy of " + args[0] + " without " + (args.length - 2) + " operator(s)");
        System.out.println(args[1]);
    }
}
